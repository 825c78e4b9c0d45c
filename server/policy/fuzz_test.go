package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/validate"
)

func FuzzParseDefinition(f *testing.F) {
	for _, seed := range []string{
		wsDef(denyRule),
		wsDef(fallbackRule, strictRule),
		wsDef(fallbackRule, fallbackRule),
		defJSON(`{"kind":"selected_users","user_ids":["6F9619FF-8B86-4011-B42D-00C04FC964FF"]}`, denyRule),
		defJSON(`{"kind":"selected_keys","key_ids":["k","é"]}`, strictRule),
		wsDef(matchRule(`{"kind":"request","models":["a/b"],"stream":null,"capabilities":["tools","reasoning"]}`)),
		wsDef(matchRule(`{"kind":"request","stream":true}`)),
		wsDef(act("models", `"names":["openai/gpt-4o"]`), act("providers", `"names":["openai"]`)),
		wsDef(priceJSON(`"2.50"`, `"007"`), budgetJSON(`"1.0"`, `"day"`, `"per_key"`)),
		wsDef(priceJSON(`"0.0000000001"`, `"1000000.000000001"`), budgetJSON(`"9223372037"`, `"month"`, `"shared"`)),
		wsDef(act("request_limits", `"max_output_tokens":1e3`), act("credential_access", `"scopes":["org","org"]`)),
		wsDef(fallbackJSON(`["a","b","c","d"]`, `["timeout","rate_limited","upstream_unavailable"]`, "5", "120000")),
		wsDef(act("deny", `"message":"\u00e9\ud83d\ude00"`)),
		wsDef(priceJSON(`"1."`, `"-1"`)),
		wsDef(act("deny", `"message":"\u0000\ud800x"`), act("models", `"names":["\u00e9","a\\b"]`)),
		defJSON(`{"kind":"selected_keys","key_ids":["k1","k2"]}`,
			`{"match":{"kind":"request","models":["a/b","c/d"],"stream":false,"capabilities":["structured_output"]},"action":{"kind":"deny","message":"m"}}`,
			act("models", `"names":["a/b"]`), act("providers", `"names":["a"]`), act("strict_parameters", ""),
			priceJSON(`"0.5"`, `"1"`), act("request_limits", `"max_output_tokens":100`),
			act("credential_access", `"scopes":["platform","workspace"]`),
			fallbackJSON(`["c/d"]`, `["upstream_unavailable"]`, "4", "30000"),
			budgetJSON(`"25"`, `"month"`, `"shared"`)),
		`{"target":{"kind":"org"},"rules":[{"match":{},"action":{"kind":7}}],"x":null}`,
		`[]`, `null`, ``, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDefinitionJSON(data)
		if err != nil {
			ve, ok := validate.AsError(err)
			if !ok || len(ve.Issues) == 0 {
				t.Fatalf("error is not a validation error with issues: %v", err)
			}
			for _, is := range ve.Issues {
				if len(is.Loc) < 2 || is.Loc[0] != "body" || is.Loc[1] != "definition" || is.Type == "" || is.Msg == "" {
					t.Fatalf("malformed issue %+v", is)
				}
			}
			return
		}
		if err := checkLimits(d); err != nil {
			t.Fatalf("accepted a definition the schema forbids: %v\ninput: %q", err, data)
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("marshal accepted definition: %v", err)
		}
		again, err := ParseDefinitionJSON(out)
		if err != nil {
			t.Fatalf("own output refused: %v\noutput: %s", err, out)
		}
		if !reflect.DeepEqual(d, again) {
			t.Fatalf("round trip changed the definition\nfirst:  %+v\nsecond: %+v\noutput: %s", d, again, out)
		}
		// Whatever may be saved can be enforced: its money is whole
		// nano-dollars within int64 (what budgets and bounds compute in).
		if StorableErr(d, nil) == nil {
			for i, r := range d.Rules {
				for _, m := range []Decimal{r.Action.AmountUSD, r.Action.MaxInputPricePerMTok, r.Action.MaxOutputPricePerMTok} {
					if m.Text == "" {
						continue
					}
					if _, err := catalog.ParseNanoUSD(m.Text); err != nil {
						t.Fatalf("rule %d: storable money %q that cannot be counted: %v", i, m.Text, err)
					}
				}
			}
		}
		// Whatever was accepted can be evaluated.
		p := []Policy{{ID: uuid.UUID{1}, Name: "fuzz", Enabled: true, Definition: d}}
		Evaluate(p, request())
		Evaluate(p, discovery())
	})
}

// checkLimits restates spec 2.3 and 8 independently of the parser, so the
// fuzzer can tell when the parser let something through.
func checkLimits(d Definition) error {
	switch d.Target.Kind {
	case TargetWorkspace:
		if d.Target.UserIDs != nil || d.Target.KeyIDs != nil {
			return fmt.Errorf("workspace target with ids")
		}
	case TargetSelectedUsers:
		if n := len(d.Target.UserIDs); n < 1 || n > 1000 || d.Target.KeyIDs != nil {
			return fmt.Errorf("user_ids: %d", n)
		}
	case TargetSelectedKeys:
		if err := checkStrings("key_ids", d.Target.KeyIDs, 1, 1000, 1, 255); err != nil || d.Target.UserIDs != nil {
			return fmt.Errorf("key_ids: %v", err)
		}
	default:
		return fmt.Errorf("target kind %q", d.Target.Kind)
	}
	if n := len(d.Rules); n < 1 || n > 100 {
		return fmt.Errorf("%d rules", n)
	}
	fallbacks := 0
	for i, r := range d.Rules {
		if r.Action.Kind == ActionFallback {
			fallbacks++
		}
		if err := checkMatch(r.Match); err != nil {
			return fmt.Errorf("rule %d match: %w", i, err)
		}
		if err := checkAction(r.Action); err != nil {
			return fmt.Errorf("rule %d action: %w", i, err)
		}
	}
	if fallbacks > 1 {
		return fmt.Errorf("%d fallback rules", fallbacks)
	}
	return nil
}

func checkMatch(m Match) error {
	switch m.Kind {
	case MatchAllRequests:
		if m.Models != nil || m.Stream != nil || m.Capabilities != nil {
			return fmt.Errorf("all_requests with members")
		}
	case MatchRequest:
		if err := checkStrings("models", m.Models, 0, 1000, 1, 255); err != nil {
			return err
		}
		return checkEnum("capabilities", m.Capabilities, 0, 3, capabilities)
	default:
		return fmt.Errorf("kind %q", m.Kind)
	}
	return nil
}

func checkAction(a Action) error {
	// Members of other kinds must stay zero.
	rest := a
	rest.Kind = ""
	switch a.Kind {
	case ActionModels, ActionProviders:
		rest.Names = nil
		if err := checkStrings("names", a.Names, 1, 1000, 1, 255); err != nil {
			return err
		}
	case ActionDeny:
		rest.Message = ""
		if n := utf8.RuneCountInString(a.Message); n < 1 || n > 200 {
			return fmt.Errorf("message of %d chars", n)
		}
	case ActionStrictParameters:
	case ActionPriceLimit:
		rest.MaxInputPricePerMTok, rest.MaxOutputPricePerMTok = Decimal{}, Decimal{}
		if err := checkDecimal(a.MaxInputPricePerMTok); err != nil {
			return err
		}
		if err := checkDecimal(a.MaxOutputPricePerMTok); err != nil {
			return err
		}
	case ActionRequestLimits:
		rest.MaxOutputTokens = 0
		if a.MaxOutputTokens < 1 {
			return fmt.Errorf("max_output_tokens %d", a.MaxOutputTokens)
		}
	case ActionCredentialAccess:
		rest.Scopes = nil
		if err := checkEnum("scopes", a.Scopes, 1, 3, credentialScopes); err != nil {
			return err
		}
	case ActionFallback:
		rest.Models, rest.On, rest.MaxAttempts, rest.TimeoutMS = nil, nil, 0, 0
		if err := checkStrings("models", a.Models, 1, 4, 1, 255); err != nil {
			return err
		}
		if err := checkEnum("on", a.On, 1, 3, fallbackTriggers); err != nil {
			return err
		}
		if a.MaxAttempts < 2 || a.MaxAttempts > 5 || a.TimeoutMS < 100 || a.TimeoutMS > 120000 {
			return fmt.Errorf("max_attempts %d, timeout_ms %d", a.MaxAttempts, a.TimeoutMS)
		}
	case ActionBudget:
		rest.AmountUSD, rest.Period, rest.Aggregation = Decimal{}, "", ""
		if err := checkDecimal(a.AmountUSD); err != nil {
			return err
		}
		if !slices.Contains(budgetPeriods, a.Period) || !slices.Contains(budgetAggregations, a.Aggregation) {
			return fmt.Errorf("period %q, aggregation %q", a.Period, a.Aggregation)
		}
	default:
		return fmt.Errorf("kind %q", a.Kind)
	}
	if !reflect.DeepEqual(rest, Action{}) {
		return fmt.Errorf("%s action carries other members: %+v", a.Kind, rest)
	}
	return nil
}

func checkStrings(what string, items []string, minItems, maxItems, minLen, maxLen int) error {
	if items == nil || len(items) < minItems || len(items) > maxItems {
		return fmt.Errorf("%s: %d items", what, len(items))
	}
	for _, s := range items {
		if n := utf8.RuneCountInString(s); n < minLen || n > maxLen {
			return fmt.Errorf("%s: item of %d chars", what, n)
		}
	}
	return nil
}

func checkEnum[T ~string](what string, items []T, minItems, maxItems int, all []T) error {
	if items == nil || len(items) < minItems || len(items) > maxItems {
		return fmt.Errorf("%s: %d items", what, len(items))
	}
	for _, it := range items {
		if !slices.Contains(all, it) {
			return fmt.Errorf("%s: %q", what, it)
		}
	}
	return nil
}

func checkDecimal(d Decimal) error {
	for i, c := range d.Text {
		if !(c >= '0' && c <= '9' || c == '.' && i > 0 && i < len(d.Text)-1) {
			return fmt.Errorf("decimal %q", d.Text)
		}
	}
	if d.Text == "" || strings.Count(d.Text, ".") > 1 || d.Value.Sign() < 0 || d.Value.String() != MustDecimal(d.Text).Value.String() {
		return fmt.Errorf("decimal %q = %s", d.Text, d.Value)
	}
	return nil
}
