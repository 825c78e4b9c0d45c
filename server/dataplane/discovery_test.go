package dataplane_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// Rule 2: a model is listed when its provider has a credential in a scope
// the key is eligible for: the platform, its organization, its own
// workspace; never a sibling workspace's, nor another organization's.
func TestDiscoveryListsModelsWithAnEligibleCredential(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		o := fixture.NewOrg(t, e.st, fixture.Keyring(t), "acme")
		wsA, wsB := o.Workspace("a"), o.Workspace("b")
		owner := o.Member(auth.MembershipActive)
		tokenA, _ := o.Key(wsA, owner, nil)
		tokenB, _ := o.Key(wsB, owner, nil)

		fixture.PlatformCredential(t, e.st, o.KR, "anthropic")
		o.OrgCredential("openai")
		o.WorkspaceCredential(wsB, "google")
		other := fixture.NewOrg(t, e.st, o.KR, "other")
		other.OrgCredential("mistral")
		other.WorkspaceCredential(other.Workspace("x"), "deepseek")
		e.sync(t)

		gotA := e.listIDs(t, tokenA)
		if want := e.modelIDs(ofProviders("anthropic", "openai")); !slices.Equal(gotA, want) {
			t.Errorf("workspace a lists\n%v\nwant\n%v", gotA, want)
		}
		gotB := e.listIDs(t, tokenB)
		if want := e.modelIDs(ofProviders("anthropic", "google", "openai")); !slices.Equal(gotB, want) {
			t.Errorf("workspace b lists\n%v\nwant\n%v", gotB, want)
		}
		// Rule 1: sorted by id.
		if !slices.IsSorted(gotB) || len(gotB) == 0 {
			t.Errorf("list is not sorted by id: %v", gotB)
		}
	})
}

// Rules 3 and 4: the policies that apply to the key narrow the list with
// what needs no request; the rest waits for inference.
func TestDiscoveryAppliesPolicies(t *testing.T) {
	const (
		all    = `{"kind":"all_requests"}`
		ws     = `{"kind":"workspace"}`
		cheapM = "openai/gpt-4o-mini"
	)
	rule := func(match, action string) string { return `{"match":` + match + `,"action":` + action + `}` }
	def := func(target string, rules ...string) string {
		return `{"target":` + target + `,"rules":[` + strings.Join(rules, ",") + `]}`
	}
	under := func(in, out string) func(catalog.Model) bool {
		return func(m catalog.Model) bool {
			return decimal.RequireFromString(m.Pricing.InputPerMTok).LessThanOrEqual(decimal.RequireFromString(in)) &&
				decimal.RequireFromString(m.Pricing.OutputPerMTok).LessThanOrEqual(decimal.RequireFromString(out))
		}
	}
	// Each organization has credentials for openai, anthropic (org scope)
	// and mistral (the key's workspace); that is the unrestricted list.
	credentialed := ofProviders("anthropic", "mistral", "openai")
	and := func(fs ...func(catalog.Model) bool) func(catalog.Model) bool {
		return func(m catalog.Model) bool {
			for _, f := range fs {
				if !f(m) {
					return false
				}
			}
			return true
		}
	}
	none := func(catalog.Model) bool { return false }
	except := func(ids ...string) func(catalog.Model) bool {
		return func(m catalog.Model) bool { return !slices.Contains(ids, m.ID) }
	}
	only := func(ids ...string) func(catalog.Model) bool {
		return func(m catalog.Model) bool { return slices.Contains(ids, m.ID) }
	}

	type keyFacts struct{ keyID, ownerID, otherKeyID, otherUserID uuid.UUID }
	cases := []struct {
		name string
		// policies returns the definitions to create in the key's
		// workspace (enabled unless prefixed "disabled:").
		policies func(k keyFacts) []string
		want     func(catalog.Model) bool
	}{
		{"no policy", func(keyFacts) []string { return nil }, credentialed},
		{"models allowlist", func(keyFacts) []string {
			return []string{def(ws, rule(all, `{"kind":"models","names":["openai/gpt-4o-mini","anthropic/claude-3-5-haiku-20241022","deepseek/deepseek-chat"]}`))}
		}, only("openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-20241022")},
		{"providers allowlist", func(keyFacts) []string {
			return []string{def(ws, rule(all, `{"kind":"providers","names":["anthropic","google"]}`))}
		}, ofProviders("anthropic")},
		{"price ceiling", func(keyFacts) []string {
			return []string{def(ws, rule(all, `{"kind":"price_limit","max_input_price_per_mtok":"1","max_output_price_per_mtok":"5"}`))}
		}, and(credentialed, under("1", "5"))},
		{"the lowest of two price ceilings", func(keyFacts) []string {
			return []string{
				def(ws, rule(all, `{"kind":"price_limit","max_input_price_per_mtok":"3","max_output_price_per_mtok":"15"}`)),
				def(ws, rule(all, `{"kind":"price_limit","max_input_price_per_mtok":"0.5","max_output_price_per_mtok":"100"}`)),
			}
		}, and(credentialed, under("0.5", "15"))},
		{"unconditional deny", func(keyFacts) []string {
			return []string{def(ws, rule(all, `{"kind":"deny","message":"closed"}`))}
		}, none},
		{"unconditional deny as a request match without conditions", func(keyFacts) []string {
			return []string{def(ws, rule(`{"kind":"request","models":[],"stream":null,"capabilities":[]}`, `{"kind":"deny","message":"closed"}`))}
		}, none},
		{"model-matched deny", func(keyFacts) []string {
			return []string{def(ws, rule(`{"kind":"request","models":["openai/gpt-4o","mistral/mistral-large-2411"],"stream":null,"capabilities":[]}`, `{"kind":"deny","message":"not these"}`))}
		}, and(credentialed, except("openai/gpt-4o", "mistral/mistral-large-2411"))},
		{"credential access to the workspace scope only", func(keyFacts) []string {
			return []string{def(ws, rule(all, `{"kind":"credential_access","scopes":["workspace"]}`))}
		}, ofProviders("mistral")},
		{"credential access to a scope without credentials", func(keyFacts) []string {
			return []string{def(ws, rule(all, `{"kind":"credential_access","scopes":["platform"]}`))}
		}, none},
		{"credential access rules intersect", func(keyFacts) []string {
			return []string{
				def(ws, rule(all, `{"kind":"credential_access","scopes":["org","workspace"]}`)),
				def(ws, rule(all, `{"kind":"credential_access","scopes":["platform","org"]}`)),
			}
		}, ofProviders("anthropic", "openai")},
		{"allowlists intersect", func(keyFacts) []string {
			return []string{
				def(ws, rule(all, `{"kind":"models","names":["openai/gpt-4o","openai/gpt-4o-mini","anthropic/claude-3-haiku-20240307"]}`)),
				def(ws, rule(all, `{"kind":"providers","names":["openai"]}`)),
			}
		}, only("openai/gpt-4o", "openai/gpt-4o-mini")},
		{"stream-conditioned deny waits for inference", func(keyFacts) []string {
			return []string{def(ws, rule(`{"kind":"request","models":[],"stream":true,"capabilities":[]}`, `{"kind":"deny","message":"no streaming"}`))}
		}, credentialed},
		{"stream-conditioned deny of one model waits for inference", func(keyFacts) []string {
			return []string{def(ws, rule(`{"kind":"request","models":["`+cheapM+`"],"stream":false,"capabilities":[]}`, `{"kind":"deny","message":"stream it"}`))}
		}, credentialed},
		{"capability-conditioned rules wait for inference", func(keyFacts) []string {
			return []string{def(ws,
				rule(`{"kind":"request","models":[],"stream":null,"capabilities":["tools"]}`, `{"kind":"deny","message":"no tools"}`),
				rule(`{"kind":"request","models":[],"stream":null,"capabilities":["reasoning"]}`, `{"kind":"providers","names":["openai"]}`),
				rule(`{"kind":"request","models":[],"stream":null,"capabilities":["structured_output"]}`, `{"kind":"price_limit","max_input_price_per_mtok":"0","max_output_price_per_mtok":"0"}`),
			)}
		}, credentialed},
		{"strict parameters, request limits, fallback and budget wait for inference", func(keyFacts) []string {
			return []string{def(ws,
				rule(all, `{"kind":"strict_parameters"}`),
				rule(all, `{"kind":"request_limits","max_output_tokens":1}`),
				rule(all, `{"kind":"fallback","models":["openai/gpt-4o-mini"],"on":["timeout"],"max_attempts":2,"timeout_ms":100}`),
				rule(all, `{"kind":"budget","amount_usd":"0","period":"day","aggregation":"shared"}`),
			)}
		}, credentialed},
		{"selected key policy for this key", func(k keyFacts) []string {
			return []string{def(`{"kind":"selected_keys","key_ids":["`+k.otherKeyID.String()+`","`+k.keyID.String()+`"]}`, rule(all, `{"kind":"deny","message":"this key only"}`))}
		}, none},
		{"selected key policy for another key", func(k keyFacts) []string {
			return []string{def(`{"kind":"selected_keys","key_ids":["`+k.otherKeyID.String()+`"]}`, rule(all, `{"kind":"deny","message":"that key only"}`))}
		}, credentialed},
		{"selected user policy for the key's owner", func(k keyFacts) []string {
			return []string{def(`{"kind":"selected_users","user_ids":["`+k.ownerID.String()+`"]}`, rule(all, `{"kind":"providers","names":["mistral"]}`))}
		}, ofProviders("mistral")},
		{"selected user policy for another user", func(k keyFacts) []string {
			return []string{def(`{"kind":"selected_users","user_ids":["`+k.otherUserID.String()+`"]}`, rule(all, `{"kind":"providers","names":["mistral"]}`))}
		}, credentialed},
		{"disabled policy", func(keyFacts) []string {
			return []string{"disabled:" + def(ws, rule(all, `{"kind":"deny","message":"off"}`))}
		}, credentialed},
	}

	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		kr := fixture.Keyring(t)
		type prepared struct{ token, otherToken string }
		setups := make([]prepared, len(cases))
		for i, c := range cases {
			o := fixture.NewOrg(t, e.st, kr, "org-"+uuid.NewString()[:8])
			wsID, sibling := o.Workspace("main"), o.Workspace("sibling")
			owner, otherUser := o.Member(auth.MembershipActive), o.Member(auth.MembershipActive)
			token, keyID := o.Key(wsID, owner, nil)
			otherToken, otherKeyID := o.Key(wsID, otherUser, nil)
			o.OrgCredential("openai")
			o.OrgCredential("anthropic")
			o.WorkspaceCredential(wsID, "mistral")
			// A sibling workspace's policies never apply here.
			o.Policy(sibling, "sibling deny", true, def(ws, rule(all, `{"kind":"deny","message":"sibling"}`)))
			for j, d := range c.policies(keyFacts{keyID, owner, otherKeyID, otherUser}) {
				d, disabled := strings.CutPrefix(d, "disabled:")
				o.Policy(wsID, "p"+string(rune('a'+j)), !disabled, d)
			}
			setups[i] = prepared{token, otherToken}
		}
		e.sync(t)
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				got := e.listIDs(t, setups[i].token)
				want := e.modelIDs(and(credentialed, c.want))
				if !slices.Equal(got, want) {
					t.Fatalf("lists\n%v\nwant\n%v", got, want)
				}
				// Every listed model can be fetched; the others cannot.
				for _, m := range e.catalog.Models {
					w := e.get(setups[i].token, "/inf/v1/models/"+m.ID)
					if listed := slices.Contains(got, m.ID); (w.Code == http.StatusOK) != listed {
						t.Fatalf("GET %s: %d, listed %v", m.ID, w.Code, listed)
					}
				}
			})
		}
	})
}

// The model object has OpenAI's members and gw's, with the catalog's facts.
func TestModelObject(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnv(t, db)
		o := fixture.NewOrg(t, e.st, fixture.Keyring(t), "acme")
		wsID := o.Workspace("main")
		token, _ := o.Key(wsID, o.Member(auth.MembershipActive), nil)
		o.OrgCredential("openai")
		e.sync(t)

		w := e.get(token, "/inf/v1/models/openai/gpt-4o-mini")
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%d %s %s", w.Code, w.Header(), w.Body)
		}
		var got map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		m, _ := e.catalog.Model("openai/gpt-4o-mini")
		want := map[string]any{
			"id": m.ID, "object": "model", "created": float64(m.Created), "owned_by": "openai",
			"name": m.Name, "provider": "openai", "context_window": float64(m.ContextWindow), "max_output_tokens": float64(m.MaxOutputTokens),
			"pricing": map[string]any{
				"input_per_mtok": m.Pricing.InputPerMTok, "output_per_mtok": m.Pricing.OutputPerMTok,
				"cache_read_per_mtok": m.Pricing.CacheReadPerMTok, "cache_write_per_mtok": m.Pricing.CacheWritePerMTok,
			},
			"capabilities": toAny(m.Capabilities), "modalities": toAny(m.Modalities),
			"type": "chat", "endpoints": []any{"chat/completions", "responses", "messages"},
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		if string(gotJSON) != string(wantJSON) {
			t.Fatalf("model object\n%s\nwant\n%s", gotJSON, wantJSON)
		}
		// The list carries the very same objects.
		list := e.get(token, "/inf/v1/models").Body.String()
		if !strings.Contains(list, w.Body.String()) {
			t.Fatalf("list %s lacks the object %s", list, w.Body)
		}
	})
}

func toAny[T ~string](items []T) []any {
	out := make([]any, len(items))
	for i, s := range items {
		out[i] = string(s)
	}
	return out
}
