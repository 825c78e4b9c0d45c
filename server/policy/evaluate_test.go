package policy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Policies in these tables are named by one letter; their ids sort in the
// same order as their names.
func policyID(name string) uuid.UUID {
	return uuid.MustParse(fmt.Sprintf("00000000-0000-4000-8000-0000000000%02x", name[0]))
}

var (
	owner    = uuid.MustParse("11111111-1111-4111-8111-111111111111")
	stranger = uuid.MustParse("22222222-2222-4222-8222-222222222222")
	yes, no  = true, false
)

func pol(name string, target Target, rules ...Rule) Policy {
	return Policy{ID: policyID(name), Name: name, Enabled: true, Definition: Definition{Target: target, Rules: rules}}
}

func workspace() Target { return Target{Kind: TargetWorkspace} }

func always(a Action) Rule { return Rule{Match{Kind: MatchAllRequests}, a} }

func when(m Match, a Action) Rule { return Rule{m, a} }

func onModels(models ...string) Match {
	return Match{Kind: MatchRequest, Models: models, Capabilities: []Capability{}}
}

func onStream(stream bool) Match {
	return Match{Kind: MatchRequest, Models: []string{}, Stream: &stream, Capabilities: []Capability{}}
}

func onCapabilities(caps ...Capability) Match {
	return Match{Kind: MatchRequest, Models: []string{}, Capabilities: caps}
}

func allow(models ...string) Action { return Action{Kind: ActionModels, Names: models} }

func providers(names ...string) Action { return Action{Kind: ActionProviders, Names: names} }

func deny(msg string) Action { return Action{Kind: ActionDeny, Message: msg} }

func strict() Action { return Action{Kind: ActionStrictParameters} }

func priceLimit(in, out string) Action {
	return Action{Kind: ActionPriceLimit, MaxInputPricePerMTok: MustDecimal(in), MaxOutputPricePerMTok: MustDecimal(out)}
}

func tokens(n int64) Action { return Action{Kind: ActionRequestLimits, MaxOutputTokens: n} }

func scopes(s ...CredentialScope) Action { return Action{Kind: ActionCredentialAccess, Scopes: s} }

func fallback(models ...string) Action {
	return Action{Kind: ActionFallback, Models: models, On: []FallbackTrigger{TriggerTimeout}, MaxAttempts: 2, TimeoutMS: 1000}
}

func budget(amount string, p BudgetPeriod, agg BudgetAggregation) Action {
	return Action{Kind: ActionBudget, AmountUSD: MustDecimal(amount), Period: p, Aggregation: agg}
}

func request() Request {
	return Request{
		Phase:              PhaseInference,
		KeyID:              "key-1",
		OwnerUserID:        owner,
		Model:              "openai/gpt-4o",
		Provider:           "openai",
		InputPricePerMTok:  decimal.RequireFromString("2.5"),
		OutputPricePerMTok: decimal.RequireFromString("10"),
		CredentialScopes:   []CredentialScope{ScopePlatform, ScopeOrg, ScopeWorkspace},
	}
}

func discovery() Request {
	r := request()
	r.Phase = PhaseDiscovery
	return r
}

// outcome is a Decision reduced to what the tables pin, in a form that reads
// well in a failure message.
type outcome struct {
	Allowed      bool
	Deny         string
	ModelAllowed bool
	Tokens       int64
	Scopes       string
	Strict       bool
	Budgets      string
	Fallback     string
	Reasons      string
}

func summarize(d Decision) outcome {
	o := outcome{
		Allowed:      d.Allowed,
		Deny:         d.DenyMessage,
		ModelAllowed: d.ModelAllowed,
		Tokens:       d.MaxOutputTokens,
		Scopes:       joinEnum(d.CredentialScopes),
		Strict:       d.StrictParameters,
	}
	var parts []string
	for _, b := range d.Budgets {
		parts = append(parts, fmt.Sprintf("%s#%d %s/%s/%s", b.PolicyName, b.RuleIndex, b.AmountUSD, b.Period, b.Aggregation))
	}
	o.Budgets = strings.Join(parts, "; ")
	if d.Fallback != nil {
		o.Fallback = fmt.Sprintf("%s#%d %s", d.Fallback.PolicyName, d.Fallback.RuleIndex, strings.Join(d.Fallback.Models, ","))
	}
	parts = parts[:0]
	for _, r := range d.Reasons {
		parts = append(parts, fmt.Sprintf("%s#%d %s %s", r.PolicyName, r.RuleIndex, r.Action, r.Effect))
	}
	o.Reasons = strings.Join(parts, "; ")
	return o
}

const allThree = "platform, org, workspace"

func TestEvaluate(t *testing.T) {
	streaming := request()
	streaming.Stream = true
	withTools := request()
	withTools.Capabilities = []Capability{CapabilityTools, CapabilityReasoning}
	noCredential := request()
	noCredential.CredentialScopes = nil
	orgOnly := request()
	orgOnly.CredentialScopes = []CredentialScope{ScopeOrg}
	zeroPhase := request()
	zeroPhase.Phase = ""
	cheap := request()
	cheap.InputPricePerMTok, cheap.OutputPricePerMTok = decimal.RequireFromString("1.0"), decimal.RequireFromString("4")
	disabled := pol("A", workspace(), always(deny("off")))
	disabled.Enabled = false

	tests := []struct {
		name     string
		policies []Policy
		req      Request
		want     outcome
	}{
		{"no policies", nil, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"disabled policy", []Policy{disabled}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},

		// targets
		{"selected user is the owner", []Policy{pol("A", Target{Kind: TargetSelectedUsers, UserIDs: []uuid.UUID{stranger, owner}}, always(deny("users")))}, request(),
			outcome{Deny: "users", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"selected user is someone else", []Policy{pol("A", Target{Kind: TargetSelectedUsers, UserIDs: []uuid.UUID{stranger}}, always(deny("users")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"selected key matches", []Policy{pol("A", Target{Kind: TargetSelectedKeys, KeyIDs: []string{"key-1"}}, always(deny("keys")))}, request(),
			outcome{Deny: "keys", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"selected key differs", []Policy{pol("A", Target{Kind: TargetSelectedKeys, KeyIDs: []string{"key-2"}}, always(deny("keys")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"unknown target kind", []Policy{pol("A", Target{Kind: "org"}, always(deny("x")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},

		// models and providers allowlists intersect
		{"model on allowlist", []Policy{pol("A", workspace(), always(allow("openai/gpt-4o", "x/y")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree, Reasons: "A#0 models admit"}},
		{"model off allowlist", []Policy{pol("A", workspace(), always(allow("x/y")))}, request(),
			outcome{Deny: `model "openai/gpt-4o" is not allowed by policy`, Scopes: allThree, Reasons: "A#0 models deny"}},
		{"allowlists intersect", []Policy{
			pol("A", workspace(), always(allow("openai/gpt-4o"))),
			pol("B", workspace(), always(allow("x/y")), always(allow("openai/gpt-4o")))}, request(),
			outcome{Deny: `model "openai/gpt-4o" is not allowed by policy`, Scopes: allThree,
				Reasons: "A#0 models admit; B#1 models admit; B#0 models deny"}},
		{"provider on allowlist", []Policy{pol("A", workspace(), always(providers("openai")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree, Reasons: "A#0 providers admit"}},
		{"provider off allowlist", []Policy{pol("A", workspace(), always(providers("anthropic")))}, request(),
			outcome{Deny: `provider "openai" is not allowed by policy`, Scopes: allThree, Reasons: "A#0 providers deny"}},
		{"allowlist only for streaming", []Policy{pol("A", workspace(), when(onStream(true), allow("x/y")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},

		// deny and matches
		{"deny all", []Policy{pol("A", workspace(), always(deny("Not today.")))}, request(),
			outcome{Deny: "Not today.", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"two denies: lowest policy id speaks", []Policy{
			pol("B", workspace(), always(deny("from B"))),
			pol("A", workspace(), always(deny("z from A")), always(deny("a from A")))}, request(),
			outcome{Deny: "a from A", ModelAllowed: true, Scopes: allThree, Reasons: "A#1 deny deny; A#0 deny deny; B#0 deny deny"}},
		{"deny for the model", []Policy{pol("A", workspace(), when(onModels("openai/gpt-4o"), deny("m")))}, request(),
			outcome{Deny: "m", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"deny for another model", []Policy{pol("A", workspace(), when(onModels("x/y"), deny("m")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"deny streaming, request streams", []Policy{pol("A", workspace(), when(onStream(true), deny("s")))}, streaming,
			outcome{Deny: "s", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"deny streaming, request does not", []Policy{pol("A", workspace(), when(onStream(true), deny("s")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"deny non-streaming", []Policy{pol("A", workspace(), when(onStream(false), deny("s")))}, request(),
			outcome{Deny: "s", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"deny tools, request uses tools", []Policy{pol("A", workspace(), when(onCapabilities(CapabilityTools), deny("t")))}, withTools,
			outcome{Deny: "t", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"deny tools+structured, request lacks one", []Policy{pol("A", workspace(), when(onCapabilities(CapabilityTools, CapabilityStructuredOutput), deny("t")))}, withTools,
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"all conditions must hold", []Policy{pol("A", workspace(), when(Match{MatchRequest, []string{"openai/gpt-4o"}, &yes, []Capability{CapabilityTools}}, deny("all")))}, withTools,
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"zero phase is inference", []Policy{pol("A", workspace(), when(onStream(false), deny("s")))}, zeroPhase,
			outcome{Deny: "s", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},

		// price ceilings: the lowest wins, equal is within
		{"prices within", []Policy{pol("A", workspace(), always(priceLimit("5", "15")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree, Reasons: "A#0 price_limit admit"}},
		{"prices at the ceiling", []Policy{pol("A", workspace(), always(priceLimit("2.50", "10.000")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree, Reasons: "A#0 price_limit admit"}},
		{"input price over", []Policy{pol("A", workspace(), always(priceLimit("2.49", "100")))}, request(),
			outcome{Deny: `model "openai/gpt-4o" exceeds the price limit set by policy`, Scopes: allThree, Reasons: "A#0 price_limit deny"}},
		{"output price over", []Policy{pol("A", workspace(), always(priceLimit("100", "9.99")))}, request(),
			outcome{Deny: `model "openai/gpt-4o" exceeds the price limit set by policy`, Scopes: allThree, Reasons: "A#0 price_limit deny"}},
		{"lowest ceiling wins", []Policy{
			pol("A", workspace(), always(priceLimit("100", "100"))),
			pol("B", workspace(), always(priceLimit("1", "100")))}, request(),
			outcome{Deny: `model "openai/gpt-4o" exceeds the price limit set by policy`, Scopes: allThree,
				Reasons: "A#0 price_limit admit; B#0 price_limit deny"}},
		{"cheap model under both", []Policy{
			pol("A", workspace(), always(priceLimit("100", "4"))),
			pol("B", workspace(), always(priceLimit("1", "100")))}, cheap,
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree, Reasons: "A#0 price_limit admit; B#0 price_limit admit"}},

		// request limits and strict parameters narrow
		{"lowest max_output_tokens", []Policy{
			pol("A", workspace(), always(tokens(4096))),
			pol("B", workspace(), always(tokens(512)), always(tokens(1024)))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Tokens: 512, Scopes: allThree,
				Reasons: "A#0 request_limits narrow; B#1 request_limits narrow; B#0 request_limits narrow"}},
		{"strict parameters", []Policy{pol("A", workspace(), always(strict()))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Strict: true, Scopes: allThree, Reasons: "A#0 strict_parameters narrow"}},

		// credential scopes intersect
		{"credential scopes admit", []Policy{pol("A", workspace(), always(scopes(ScopePlatform, ScopeOrg, ScopeWorkspace)))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree, Reasons: "A#0 credential_access admit"}},
		{"credential scopes intersect", []Policy{
			pol("A", workspace(), always(scopes(ScopePlatform, ScopeOrg))),
			pol("B", workspace(), always(scopes(ScopeWorkspace, ScopeOrg)))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: "org", Reasons: "A#0 credential_access narrow; B#0 credential_access narrow"}},
		{"credential scopes disjoint", []Policy{
			pol("A", workspace(), always(scopes(ScopePlatform))),
			pol("B", workspace(), always(scopes(ScopeOrg)))}, request(),
			outcome{Deny: `no credential for model "openai/gpt-4o" is allowed by policy`, ModelAllowed: true, Scopes: "",
				Reasons: "A#0 credential_access deny; B#0 credential_access deny"}},
		{"credential only where the model has none", []Policy{pol("A", workspace(), always(scopes(ScopePlatform, ScopeWorkspace)))}, orgOnly,
			outcome{Deny: `no credential for model "openai/gpt-4o" is allowed by policy`, ModelAllowed: true, Scopes: "",
				Reasons: "A#0 credential_access deny"}},
		{"credential rule covers what the model has", []Policy{pol("A", workspace(), always(scopes(ScopeOrg, ScopeWorkspace)))}, orgOnly,
			outcome{Allowed: true, ModelAllowed: true, Scopes: "org", Reasons: "A#0 credential_access admit"}},
		{"no credential configured", nil, noCredential,
			outcome{Deny: `no credential is configured for model "openai/gpt-4o"`, ModelAllowed: true, Scopes: ""}},
		{"no credential configured, with a rule", []Policy{pol("A", workspace(), always(scopes(ScopeOrg)))}, noCredential,
			outcome{Deny: `no credential is configured for model "openai/gpt-4o"`, ModelAllowed: true, Scopes: "",
				Reasons: "A#0 credential_access admit"}},

		// fallback: one, the most specific target first, then the lowest id
		{"fallback", []Policy{pol("A", workspace(), always(fallback("x/y")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree, Fallback: "A#0 x/y", Reasons: "A#0 fallback narrow"}},
		{"fallback: selected key beats workspace", []Policy{
			pol("A", workspace(), always(fallback("x/a"))),
			pol("B", Target{Kind: TargetSelectedKeys, KeyIDs: []string{"key-1"}}, always(strict()), always(fallback("x/b"))),
			pol("C", Target{Kind: TargetSelectedUsers, UserIDs: []uuid.UUID{owner}}, always(fallback("x/c")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Strict: true, Scopes: allThree, Fallback: "B#1 x/b",
				Reasons: "A#0 fallback narrow; B#0 strict_parameters narrow; B#1 fallback narrow; C#0 fallback narrow"}},
		{"fallback: lowest id among equals", []Policy{
			pol("C", workspace(), always(fallback("x/c"))),
			pol("B", workspace(), always(fallback("x/b")))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree, Fallback: "B#0 x/b",
				Reasons: "B#0 fallback narrow; C#0 fallback narrow"}},

		// budgets: every one counts
		{"budgets collected", []Policy{
			pol("B", workspace(), always(budget("100", PeriodMonth, AggregationShared))),
			pol("A", workspace(), always(budget("5", PeriodDay, AggregationPerKey)), when(onStream(true), budget("1", PeriodDay, AggregationShared)))}, request(),
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree, Budgets: "A#0 5/day/per_key; B#0 100/month/shared",
				Reasons: "A#0 budget narrow; B#0 budget narrow"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(Evaluate(tt.policies, tt.req))
			if got != tt.want {
				t.Errorf("decision\n got: %+v\nwant: %+v", got, tt.want)
			}
		})
	}
}

// Discovery applies only what needs no request (spec 4.9 rules 3 and 4).
func TestEvaluateDiscovery(t *testing.T) {
	tests := []struct {
		name     string
		policies []Policy
		want     outcome
	}{
		{"model allowlist applies", []Policy{pol("A", workspace(), always(allow("x/y")))},
			outcome{Deny: `model "openai/gpt-4o" is not allowed by policy`, Scopes: allThree, Reasons: "A#0 models deny"}},
		{"model allowlist for the model applies", []Policy{pol("A", workspace(), when(onModels("openai/gpt-4o"), providers("anthropic")))},
			outcome{Deny: `provider "openai" is not allowed by policy`, Scopes: allThree, Reasons: "A#0 providers deny"}},
		{"allowlist conditioned on streaming is ignored", []Policy{pol("A", workspace(), when(onStream(false), allow("x/y")))},
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"price ceiling applies", []Policy{pol("A", workspace(), always(priceLimit("1", "1")))},
			outcome{Deny: `model "openai/gpt-4o" exceeds the price limit set by policy`, Scopes: allThree, Reasons: "A#0 price_limit deny"}},
		{"unconditional deny applies", []Policy{pol("A", workspace(), always(deny("closed")))},
			outcome{Deny: "closed", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"request match without conditions is unconditional", []Policy{pol("A", workspace(), when(onModels(), deny("closed")))},
			outcome{Deny: "closed", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"model-matched deny applies", []Policy{pol("A", workspace(), when(onModels("openai/gpt-4o"), deny("m")))},
			outcome{Deny: "m", ModelAllowed: true, Scopes: allThree, Reasons: "A#0 deny deny"}},
		{"deny of another model", []Policy{pol("A", workspace(), when(onModels("x/y"), deny("m")))},
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"stream-conditioned deny is ignored", []Policy{pol("A", workspace(), when(onStream(false), deny("s")))},
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"model and stream deny is ignored", []Policy{pol("A", workspace(), when(Match{MatchRequest, []string{"openai/gpt-4o"}, &no, []Capability{}}, deny("s")))},
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"capability-conditioned deny is ignored", []Policy{pol("A", workspace(), when(onCapabilities(CapabilityReasoning), deny("c")))},
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"credential access applies", []Policy{pol("A", workspace(), always(scopes(ScopeWorkspace)))},
			outcome{Allowed: true, ModelAllowed: true, Scopes: "workspace", Reasons: "A#0 credential_access narrow"}},
		{"inference-only actions are ignored", []Policy{pol("A", workspace(),
			always(strict()), always(tokens(10)), always(fallback("x/y")), always(budget("1", PeriodDay, AggregationShared)))},
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
		{"targets still apply", []Policy{pol("A", Target{Kind: TargetSelectedKeys, KeyIDs: []string{"other"}}, always(deny("k")))},
			outcome{Allowed: true, ModelAllowed: true, Scopes: allThree}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := discovery()
			req.Stream = true // ignored in discovery either way
			req.Capabilities = []Capability{CapabilityReasoning}
			got := summarize(Evaluate(tt.policies, req))
			if got != tt.want {
				t.Errorf("decision\n got: %+v\nwant: %+v", got, tt.want)
			}
		})
	}
}

// The full Decision, not just its summary: values, texts and rule refs.
func TestEvaluateDecisionDetail(t *testing.T) {
	a := pol("A", workspace(),
		always(priceLimit("5.00", "20")),
		always(tokens(100)),
		always(budget("10.50", PeriodMonth, AggregationPerKey)),
		always(fallback("anthropic/claude", "x/y")))
	b := pol("B", workspace(), always(priceLimit("5", "30")), always(scopes(ScopeOrg, ScopeWorkspace)))
	got := Evaluate([]Policy{b, a}, request())
	refA := func(i int) RuleRef { return RuleRef{PolicyID: a.ID, PolicyName: "A", RuleIndex: i} }
	refB := func(i int) RuleRef { return RuleRef{PolicyID: b.ID, PolicyName: "B", RuleIndex: i} }
	in, out := MustDecimal("5"), MustDecimal("20")
	want := Decision{
		Allowed:               true,
		ModelAllowed:          true,
		MaxInputPricePerMTok:  &in,
		MaxOutputPricePerMTok: &out,
		MaxOutputTokens:       100,
		CredentialScopes:      []CredentialScope{ScopeOrg, ScopeWorkspace},
		Budgets:               []Budget{{RuleRef: refA(2), AmountUSD: MustDecimal("10.50"), Period: PeriodMonth, Aggregation: AggregationPerKey}},
		Fallback: &Fallback{RuleRef: refA(3), Models: []string{"anthropic/claude", "x/y"},
			On: []FallbackTrigger{TriggerTimeout}, MaxAttempts: 2, TimeoutMS: 1000},
		Reasons: []Reason{
			{refA(0), ActionPriceLimit, EffectAdmit, "prices 2.5 in / 10 out per MTok are within the ceilings 5.00 / 20"},
			{refA(1), ActionRequestLimits, EffectNarrow, "max_output_tokens at most 100"},
			{refA(3), ActionFallback, EffectNarrow, "fallback to anthropic/claude, x/y on timeout (at most 2 attempts, 1000 ms timeout)"},
			{refA(2), ActionBudget, EffectNarrow, "budget of 10.50 USD per month, per_key"},
			{refB(0), ActionPriceLimit, EffectAdmit, "prices 2.5 in / 10 out per MTok are within the ceilings 5 / 30"},
			{refB(1), ActionCredentialAccess, EffectNarrow, "credential scopes limited to org, workspace; the model's credentials in platform are not used"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decision\n got: %+v\nwant: %+v", got, want)
	}
	// "5" and "5.00" are the same ceiling; the choice between them must not
	// depend on order.
	if again := Evaluate([]Policy{a, b}, request()); !reflect.DeepEqual(again, got) {
		t.Errorf("order changed the decision\nfirst:  %+v\nsecond: %+v", got, again)
	}
}

// Evaluate reads its inputs and never writes them: the same policies serve
// many requests concurrently.
func TestEvaluateDoesNotMutate(t *testing.T) {
	policies := []Policy{pol("A", workspace(), always(fallback("x/y")), always(scopes(ScopeOrg)), always(budget("1", PeriodDay, AggregationShared)))}
	before := fmt.Sprintf("%#v", policies)
	d := Evaluate(policies, request())
	d.Fallback.Models[0] = "changed"
	if after := fmt.Sprintf("%#v", policies); after != before {
		t.Errorf("policies changed\nbefore: %s\nafter:  %s", before, after)
	}
	if !slices.Equal(policies[0].Definition.Rules[0].Action.Models, []string{"x/y"}) {
		t.Error("decision aliases the policy's fallback models")
	}
}

// A decision marshals with every list present, empty rather than null, so
// `gw policies explain --output json` has one shape.
func TestDecisionJSON(t *testing.T) {
	got, err := json.Marshal(Evaluate(nil, request()))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"allowed":true,"model_allowed":true,"max_input_price_per_mtok":null,"max_output_price_per_mtok":null,` +
		`"max_output_tokens":0,"credential_scopes":["platform","org","workspace"],"strict_parameters":false,` +
		`"budgets":[],"fallback":null,"reasons":[]}`
	if string(got) != want {
		t.Errorf("decision JSON\n got: %s\nwant: %s", got, want)
	}
	p := pol("A", workspace(), always(deny("no")), always(budget("1.50", PeriodDay, AggregationShared)))
	got, err = json.Marshal(Evaluate([]Policy{p}, request()))
	if err != nil {
		t.Fatal(err)
	}
	want = `{"allowed":false,"deny_message":"no","model_allowed":true,"max_input_price_per_mtok":null,"max_output_price_per_mtok":null,` +
		`"max_output_tokens":0,"credential_scopes":["platform","org","workspace"],"strict_parameters":false,` +
		`"budgets":[{"policy_id":"00000000-0000-4000-8000-000000000041","policy_name":"A","rule_index":1,"amount_usd":"1.50","period":"day","aggregation":"shared"}],` +
		`"fallback":null,"reasons":[` +
		`{"policy_id":"00000000-0000-4000-8000-000000000041","policy_name":"A","rule_index":0,"action":"deny","effect":"deny","detail":"denied: \"no\""},` +
		`{"policy_id":"00000000-0000-4000-8000-000000000041","policy_name":"A","rule_index":1,"action":"budget","effect":"narrow","detail":"budget of 1.50 USD per day, shared"}]}`
	if string(got) != want {
		t.Errorf("decision JSON\n got: %s\nwant: %s", got, want)
	}
}
