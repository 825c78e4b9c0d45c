package policy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/gw-gateway/gw/server/validate"
)

const root = "body.definition"

func act(kind, members string) string {
	if members == "" {
		return ruleJSON(`{"kind":"` + kind + `"}`)
	}
	return ruleJSON(`{"kind":"` + kind + `",` + members + `}`)
}

func fallbackJSON(models, on string, attempts, timeout string) string {
	return act("fallback", `"models":`+models+`,"on":`+on+`,"max_attempts":`+attempts+`,"timeout_ms":`+timeout)
}

func priceJSON(in, out string) string {
	return act("price_limit", `"max_input_price_per_mtok":`+in+`,"max_output_price_per_mtok":`+out)
}

func budgetJSON(amount, period, aggregation string) string {
	return act("budget", `"amount_usd":`+amount+`,"period":`+period+`,"aggregation":`+aggregation)
}

func TestParseDefinitionBoundaries(t *testing.T) {
	r0 := root + ".rules[0]"
	a0 := r0 + ".action"
	m0 := r0 + ".match"
	tests := []struct {
		name string
		body string
		want []issueKey // nil: accepted
	}{
		// rules 1..100
		{"rules 0", wsDef(), []issueKey{{root + ".rules", "too_short"}}},
		{"rules 1", wsDef(denyRule), nil},
		{"rules 100", wsDef(repeatRule(denyRule, 100)...), nil},
		{"rules 101", wsDef(repeatRule(denyRule, 101)...), []issueKey{{root + ".rules", "too_long"}}},
		{"rules not a list", `{"target":{"kind":"workspace"},"rules":{}}`, []issueKey{{root + ".rules", "list_type"}}},
		{"rule not an object", wsDef(`"deny"`), []issueKey{{r0, "model_type"}}},

		// at most one fallback
		{"one fallback", wsDef(fallbackRule, denyRule), nil},
		{"two fallbacks", wsDef(fallbackRule, denyRule, fallbackRule), []issueKey{{root + ".rules", "value_error"}}},

		// selected_users.user_ids 1..1000
		{"user_ids 0", defJSON(`{"kind":"selected_users","user_ids":[]}`, denyRule), []issueKey{{root + ".target.user_ids", "too_short"}}},
		{"user_ids 1", defJSON(`{"kind":"selected_users","user_ids":`+uuids(1)+`}`, denyRule), nil},
		{"user_ids 1000", defJSON(`{"kind":"selected_users","user_ids":`+uuids(1000)+`}`, denyRule), nil},
		{"user_ids 1001", defJSON(`{"kind":"selected_users","user_ids":`+uuids(1001)+`}`, denyRule), []issueKey{{root + ".target.user_ids", "too_long"}}},
		{"user_ids bad uuid", defJSON(`{"kind":"selected_users","user_ids":["nope",7]}`, denyRule), []issueKey{
			{root + ".target.user_ids[0]", "uuid_parsing"}, {root + ".target.user_ids[1]", "uuid_type"}}},
		{"user_ids missing", defJSON(`{"kind":"selected_users"}`, denyRule), []issueKey{{root + ".target.user_ids", "missing"}}},

		// selected_keys.key_ids 1..1000, each 1..255
		{"key_ids 0", defJSON(`{"kind":"selected_keys","key_ids":[]}`, denyRule), []issueKey{{root + ".target.key_ids", "too_short"}}},
		{"key_ids 1000", defJSON(`{"kind":"selected_keys","key_ids":`+strs(1000, 8)+`}`, denyRule), nil},
		{"key_ids 1001", defJSON(`{"kind":"selected_keys","key_ids":`+strs(1001, 8)+`}`, denyRule), []issueKey{{root + ".target.key_ids", "too_long"}}},
		{"key_id 0 chars", defJSON(`{"kind":"selected_keys","key_ids":[""]}`, denyRule), []issueKey{{root + ".target.key_ids[0]", "string_too_short"}}},
		{"key_id 1 char", defJSON(`{"kind":"selected_keys","key_ids":["k"]}`, denyRule), nil},
		{"key_id 255 chars", defJSON(`{"kind":"selected_keys","key_ids":`+strs(1, 255)+`}`, denyRule), nil},
		{"key_id 256 chars", defJSON(`{"kind":"selected_keys","key_ids":`+strs(1, 256)+`}`, denyRule), []issueKey{{root + ".target.key_ids[0]", "string_too_long"}}},
		{"key_id 255 runes of 2 bytes", defJSON(`{"kind":"selected_keys","key_ids":[`+quote(strings.Repeat("é", 255))+`]}`, denyRule), nil},

		// request match
		{"match models 0", wsDef(matchRule(`{"kind":"request","stream":null,"models":[]}`)), nil},
		{"match models 1000", wsDef(matchRule(`{"kind":"request","stream":null,"models":` + strs(1000, 10) + `}`)), nil},
		{"match models 1001", wsDef(matchRule(`{"kind":"request","stream":null,"models":` + strs(1001, 10) + `}`)), []issueKey{{m0 + ".models", "too_long"}}},
		{"match model 256 chars", wsDef(matchRule(`{"kind":"request","stream":null,"models":` + strs(1, 256) + `}`)), []issueKey{{m0 + ".models[0]", "string_too_long"}}},
		{"match model empty", wsDef(matchRule(`{"kind":"request","stream":null,"models":[""]}`)), []issueKey{{m0 + ".models[0]", "string_too_short"}}},
		{"match members omitted", wsDef(matchRule(`{"kind":"request","stream":null}`)), nil},
		{"match stream null", wsDef(matchRule(`{"kind":"request","models":[],"stream":null,"capabilities":[]}`)), nil},
		{"match stream true", wsDef(matchRule(`{"kind":"request","stream":true}`)), nil},
		{"match stream not bool", wsDef(matchRule(`{"kind":"request","stream":"yes"}`)), []issueKey{{m0 + ".stream", "bool_type"}}},
		{"capabilities 3", wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":["tools","reasoning","structured_output"]}`)), nil},
		{"capabilities 4", wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":["tools","reasoning","structured_output","tools"]}`)), []issueKey{{m0 + ".capabilities", "too_long"}}},
		{"capability streaming", wsDef(matchRule(`{"kind":"request","stream":null,"capabilities":["streaming"]}`)), []issueKey{{m0 + ".capabilities[0]", "literal_error"}}},
		{"all_requests with models", wsDef(matchRule(`{"kind":"all_requests","models":[]}`)), []issueKey{{m0 + ".models", "extra_forbidden"}}},

		// models / providers names 1..1000, each 1..255
		{"names 0", wsDef(act("models", `"names":[]`)), []issueKey{{a0 + ".names", "too_short"}}},
		{"names 1", wsDef(act("providers", `"names":["openai"]`)), nil},
		{"names 1000", wsDef(act("models", `"names":`+strs(1000, 12))), nil},
		{"names 1001", wsDef(act("providers", `"names":`+strs(1001, 12))), []issueKey{{a0 + ".names", "too_long"}}},
		{"name 255 chars", wsDef(act("models", `"names":`+strs(1, 255))), nil},
		{"name 256 chars", wsDef(act("models", `"names":`+strs(1, 256))), []issueKey{{a0 + ".names[0]", "string_too_long"}}},
		{"name empty", wsDef(act("models", `"names":["a",""]`)), []issueKey{{a0 + ".names[1]", "string_too_short"}}},
		{"names missing", wsDef(act("models", "")), []issueKey{{a0 + ".names", "missing"}}},

		// deny message 1..200
		{"message 0", wsDef(act("deny", `"message":""`)), []issueKey{{a0 + ".message", "string_too_short"}}},
		{"message 1", wsDef(act("deny", `"message":"n"`)), nil},
		{"message 200", wsDef(act("deny", `"message":`+quote(strings.Repeat("m", 200)))), nil},
		{"message 201", wsDef(act("deny", `"message":`+quote(strings.Repeat("m", 201)))), []issueKey{{a0 + ".message", "string_too_long"}}},
		{"message 200 multibyte", wsDef(act("deny", `"message":`+quote(strings.Repeat("ü", 200)))), nil},
		{"message not string", wsDef(act("deny", `"message":5`)), []issueKey{{a0 + ".message", "string_type"}}},

		// request_limits.max_output_tokens >= 1
		{"max_output_tokens 0", wsDef(act("request_limits", `"max_output_tokens":0`)), []issueKey{{a0 + ".max_output_tokens", "greater_than_equal"}}},
		{"max_output_tokens 1", wsDef(act("request_limits", `"max_output_tokens":1`)), nil},
		{"max_output_tokens huge", wsDef(act("request_limits", `"max_output_tokens":9223372036854775807`)), nil},
		{"max_output_tokens float", wsDef(act("request_limits", `"max_output_tokens":1.5`)), []issueKey{{a0 + ".max_output_tokens", "int_from_float"}}},
		{"max_output_tokens string", wsDef(act("request_limits", `"max_output_tokens":"5"`)), []issueKey{{a0 + ".max_output_tokens", "int_type"}}},

		// credential_access.scopes 1..3
		{"scopes 0", wsDef(act("credential_access", `"scopes":[]`)), []issueKey{{a0 + ".scopes", "too_short"}}},
		{"scopes 1", wsDef(act("credential_access", `"scopes":["org"]`)), nil},
		{"scopes 3", wsDef(act("credential_access", `"scopes":["platform","org","workspace"]`)), nil},
		{"scopes 4", wsDef(act("credential_access", `"scopes":["platform","org","workspace","org"]`)), []issueKey{{a0 + ".scopes", "too_long"}}},
		{"scope unknown", wsDef(act("credential_access", `"scopes":["instance"]`)), []issueKey{{a0 + ".scopes[0]", "literal_error"}}},

		// fallback
		{"fallback models 0", wsDef(fallbackJSON(`[]`, `["timeout"]`, "2", "100")), []issueKey{{a0 + ".models", "too_short"}}},
		{"fallback models 1", wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "100")), nil},
		{"fallback models 4", wsDef(fallbackJSON(strs(4, 5), `["timeout"]`, "2", "100")), nil},
		{"fallback models 5", wsDef(fallbackJSON(strs(5, 5), `["timeout"]`, "2", "100")), []issueKey{{a0 + ".models", "too_long"}}},
		{"fallback model 256 chars", wsDef(fallbackJSON(strs(1, 256), `["timeout"]`, "2", "100")), []issueKey{{a0 + ".models[0]", "string_too_long"}}},
		{"fallback on 0", wsDef(fallbackJSON(`["a"]`, `[]`, "2", "100")), []issueKey{{a0 + ".on", "too_short"}}},
		{"fallback on 1", wsDef(fallbackJSON(`["a"]`, `["rate_limited"]`, "2", "100")), nil},
		{"fallback on 3", wsDef(fallbackJSON(`["a"]`, `["rate_limited","upstream_unavailable","timeout"]`, "2", "100")), nil},
		{"fallback on 4", wsDef(fallbackJSON(`["a"]`, `["rate_limited","upstream_unavailable","timeout","timeout"]`, "2", "100")), []issueKey{{a0 + ".on", "too_long"}}},
		{"fallback on unknown", wsDef(fallbackJSON(`["a"]`, `["server_error"]`, "2", "100")), []issueKey{{a0 + ".on[0]", "literal_error"}}},
		{"max_attempts 1", wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "1", "100")), []issueKey{{a0 + ".max_attempts", "greater_than_equal"}}},
		{"max_attempts 2", wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "100")), nil},
		{"max_attempts 5", wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "5", "100")), nil},
		{"max_attempts 6", wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "6", "100")), []issueKey{{a0 + ".max_attempts", "less_than_equal"}}},
		{"timeout_ms 99", wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "99")), []issueKey{{a0 + ".timeout_ms", "greater_than_equal"}}},
		{"timeout_ms 100", wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "100")), nil},
		{"timeout_ms 120000", wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "120000")), nil},
		{"timeout_ms 120001", wsDef(fallbackJSON(`["a"]`, `["timeout"]`, "2", "120001")), []issueKey{{a0 + ".timeout_ms", "less_than_equal"}}},

		// prices and amounts: ^\d+(?:\.\d+)?$
		{"price 1", wsDef(priceJSON(`"1"`, `"2"`)), nil},
		{"price 1.5", wsDef(priceJSON(`"1.5"`, `"0.000001"`)), nil},
		{"price 1.", wsDef(priceJSON(`"1."`, `"2"`)), []issueKey{{a0 + ".max_input_price_per_mtok", "string_pattern_mismatch"}}},
		{"price -1", wsDef(priceJSON(`"1"`, `"-1"`)), []issueKey{{a0 + ".max_output_price_per_mtok", "string_pattern_mismatch"}}},
		{"price 1e3", wsDef(priceJSON(`"1e3"`, `"2"`)), []issueKey{{a0 + ".max_input_price_per_mtok", "string_pattern_mismatch"}}},
		{"price .5", wsDef(priceJSON(`".5"`, `"2"`)), []issueKey{{a0 + ".max_input_price_per_mtok", "string_pattern_mismatch"}}},
		{"price empty", wsDef(priceJSON(`""`, `"2"`)), []issueKey{{a0 + ".max_input_price_per_mtok", "string_pattern_mismatch"}}},
		{"price trailing newline", wsDef(priceJSON(`"1\n"`, `"2"`)), []issueKey{{a0 + ".max_input_price_per_mtok", "string_pattern_mismatch"}}},
		{"price non-ascii digit", wsDef(priceJSON(`"١"`, `"2"`)), []issueKey{{a0 + ".max_input_price_per_mtok", "string_pattern_mismatch"}}},
		{"price number", wsDef(priceJSON(`1.5`, `"2"`)), []issueKey{{a0 + ".max_input_price_per_mtok", "string_type"}}},
		{"price beyond decimal scale", wsDef(priceJSON(`"0.`+strings.Repeat("0", 10001)+`1"`, `"2"`)), []issueKey{{a0 + ".max_input_price_per_mtok", "decimal_parsing"}}},
		{"budget ok", wsDef(budgetJSON(`"100.00"`, `"month"`, `"per_key"`)), nil},
		{"budget 1e3", wsDef(budgetJSON(`"1e3"`, `"day"`, `"shared"`)), []issueKey{{a0 + ".amount_usd", "string_pattern_mismatch"}}},
		{"budget period", wsDef(budgetJSON(`"1"`, `"week"`, `"shared"`)), []issueKey{{a0 + ".period", "literal_error"}}},
		{"budget aggregation", wsDef(budgetJSON(`"1"`, `"day"`, `"team"`)), []issueKey{{a0 + ".aggregation", "literal_error"}}},

		// unknown members at every depth, and no union tag in loc
		{"extra at definition", `{"target":{"kind":"workspace"},"rules":[` + denyRule + `],"name":"x"}`, []issueKey{{root + ".name", "extra_forbidden"}}},
		{"extra at target", defJSON(`{"kind":"workspace","user_ids":[]}`, denyRule), []issueKey{{root + ".target.user_ids", "extra_forbidden"}}},
		{"extra at target with members", defJSON(`{"kind":"selected_keys","key_ids":["k"],"user_ids":[]}`, denyRule), []issueKey{{root + ".target.user_ids", "extra_forbidden"}}},
		{"extra at rule", wsDef(`{"match":{"kind":"all_requests"},"action":{"kind":"strict_parameters"},"priority":1}`), []issueKey{{r0 + ".priority", "extra_forbidden"}}},
		{"extra at match", wsDef(matchRule(`{"kind":"request","stream":null,"model":"x"}`)), []issueKey{{m0 + ".model", "extra_forbidden"}}},
		{"extra at action", wsDef(act("deny", `"message":"no","code":403`)), []issueKey{{a0 + ".code", "extra_forbidden"}}},
		{"extra at strict_parameters", wsDef(act("strict_parameters", `"enabled":true`)), []issueKey{{a0 + ".enabled", "extra_forbidden"}}},
		{"member of another kind", wsDef(act("deny", `"message":"no","names":["a"]`)), []issueKey{{a0 + ".names", "extra_forbidden"}}},
		{"extras sorted", wsDef(act("deny", `"message":"no","z":1,"a":2`)), []issueKey{{a0 + ".a", "extra_forbidden"}, {a0 + ".z", "extra_forbidden"}}},

		// discriminators
		{"target kind unknown", defJSON(`{"kind":"org","extra":1}`, denyRule), []issueKey{{root + ".target", "union_tag_invalid"}}},
		{"target kind missing", defJSON(`{"user_ids":[]}`, denyRule), []issueKey{{root + ".target", "union_tag_not_found"}}},
		{"target kind not string", defJSON(`{"kind":1}`, denyRule), []issueKey{{root + ".target", "union_tag_not_found"}}},
		{"target not object", defJSON(`"workspace"`, denyRule), []issueKey{{root + ".target", "model_type"}}},
		{"match kind unknown", wsDef(matchRule(`{"kind":"some_requests"}`)), []issueKey{{m0, "union_tag_invalid"}}},
		{"action kind unknown", wsDef(ruleJSON(`{"kind":"allow","names":["a"]}`)), []issueKey{{a0, "union_tag_invalid"}}},
		{"action kind missing", wsDef(ruleJSON(`{"names":["a"]}`)), []issueKey{{a0, "union_tag_not_found"}}},

		// required members
		{"request match without stream", wsDef(matchRule(`{"kind":"request","models":["a"]}`)), []issueKey{{m0 + ".stream", "missing"}}},
		{"definition empty", `{}`, []issueKey{{root + ".target", "missing"}, {root + ".rules", "missing"}}},
		{"definition not object", `[]`, []issueKey{{root, "model_type"}}},
		{"rule empty", wsDef(`{}`), []issueKey{{r0 + ".match", "missing"}, {r0 + ".action", "missing"}}},
		{"fallback empty", wsDef(act("fallback", "")), []issueKey{
			{a0 + ".models", "missing"}, {a0 + ".on", "missing"}, {a0 + ".max_attempts", "missing"}, {a0 + ".timeout_ms", "missing"}}},
		{"price empty members", wsDef(act("price_limit", "")), []issueKey{
			{a0 + ".max_input_price_per_mtok", "missing"}, {a0 + ".max_output_price_per_mtok", "missing"}}},

		// body-level problems
		{"empty body", ``, []issueKey{{root, "missing"}}},
		{"malformed", `{"target":}`, []issueKey{{root + "[11]", "json_invalid"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDefinitionJSON([]byte(tt.body))
			got := issueKeys(t, err)
			if !slices.Equal(got, tt.want) {
				t.Errorf("issues\n got: %v\nwant: %v", got, tt.want)
			}
		})
	}
}

// Every problem in a body is reported in one pass, in document order.
func TestParseDefinitionReportsEverything(t *testing.T) {
	body := defJSON(`{"kind":"selected_keys","key_ids":[""],"x":1}`,
		act("models", `"names":[]`),
		`{"match":{"kind":"request","stream":null,"capabilities":["vision"]},"action":{"kind":"request_limits","max_output_tokens":0}}`,
		fallbackJSON(`[]`, `["timeout"]`, "9", "100"),
		fallbackJSON(`["a"]`, `["timeout"]`, "2", "50"),
		ruleJSON(`{"kind":"nope"}`),
	)
	_, err := ParseDefinitionJSON([]byte(body))
	want := []issueKey{
		{root + ".target.key_ids[0]", "string_too_short"},
		{root + ".target.x", "extra_forbidden"},
		{root + ".rules[0].action.names", "too_short"},
		{root + ".rules[1].match.capabilities[0]", "literal_error"},
		{root + ".rules[1].action.max_output_tokens", "greater_than_equal"},
		{root + ".rules[2].action.models", "too_short"},
		{root + ".rules[2].action.max_attempts", "less_than_equal"},
		{root + ".rules[3].action.timeout_ms", "greater_than_equal"},
		{root + ".rules[4].action", "union_tag_invalid"},
		{root + ".rules", "value_error"},
	}
	if got := issueKeys(t, err); !slices.Equal(got, want) {
		t.Errorf("issues\n got: %v\nwant: %v", got, want)
	}
}

// The loc is the exact path of DESIGN §5: strings for members, ints for
// indexes, no union tags.
func TestParseDefinitionIssueShape(t *testing.T) {
	_, err := ParseDefinitionJSON([]byte(wsDef(denyRule, act("models", `"names":[]`))))
	ve, ok := validate.AsError(err)
	if !ok || len(ve.Issues) != 1 {
		t.Fatalf("want one validation issue, got %v", err)
	}
	got := ve.Issues[0]
	want := validate.Issue{
		Loc:   []any{"body", "definition", "rules", 1, "action", "names"},
		Msg:   "List should have at least 1 item after validation, not 0",
		Type:  "too_short",
		Input: []any{},
		Ctx:   map[string]any{"field_type": "List", "min_length": 1, "actual_length": 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("issue\n got: %#v\nwant: %#v", got, want)
	}

	_, err = ParseDefinitionJSON([]byte(wsDef(fallbackRule, fallbackRule)))
	ve, _ = validate.AsError(err)
	want = validate.Issue{
		Loc:  []any{"body", "definition", "rules"},
		Msg:  "Value error, at most one rule may have a fallback action",
		Type: "value_error",
		Ctx:  map[string]any{"error": "at most one rule may have a fallback action"},
	}
	if ve == nil || len(ve.Issues) != 1 || !reflect.DeepEqual(ve.Issues[0], want) {
		t.Errorf("fallback issue: got %v, want %#v", err, want)
	}
}

func TestParseDefinitionValues(t *testing.T) {
	body := defJSON(`{"kind":"selected_users","user_ids":["6F9619FF-8B86-4011-B42D-00C04FC964FF"]}`,
		`{"match":{"kind":"request","models":["openai/gpt-4o"],"stream":false,"capabilities":["tools"]},"action":{"kind":"models","names":["openai/gpt-4o"]}}`,
		`{"match":{"kind":"request","stream":null},"action":{"kind":"providers","names":["openai"]}}`,
		act("deny", `"message":"blocked"`),
		act("strict_parameters", ""),
		priceJSON(`"2.50"`, `"10"`),
		act("request_limits", `"max_output_tokens":1e3`),
		act("credential_access", `"scopes":["workspace","org"]`),
		fallbackJSON(`["anthropic/claude"]`, `["timeout","rate_limited"]`, "3", "5000"),
		budgetJSON(`"100.00"`, `"month"`, `"shared"`),
	)
	got := mustParse(t, body)
	f := false
	all := Match{Kind: MatchAllRequests}
	want := Definition{
		Target: Target{Kind: TargetSelectedUsers, UserIDs: []uuid.UUID{uuid.MustParse("6f9619ff-8b86-4011-b42d-00c04fc964ff")}},
		Rules: []Rule{
			{Match{MatchRequest, []string{"openai/gpt-4o"}, &f, []Capability{CapabilityTools}}, Action{Kind: ActionModels, Names: []string{"openai/gpt-4o"}}},
			{Match{MatchRequest, []string{}, nil, []Capability{}}, Action{Kind: ActionProviders, Names: []string{"openai"}}},
			{all, Action{Kind: ActionDeny, Message: "blocked"}},
			{all, Action{Kind: ActionStrictParameters}},
			{all, Action{Kind: ActionPriceLimit, MaxInputPricePerMTok: MustDecimal("2.50"), MaxOutputPricePerMTok: MustDecimal("10")}},
			{all, Action{Kind: ActionRequestLimits, MaxOutputTokens: 1000}},
			{all, Action{Kind: ActionCredentialAccess, Scopes: []CredentialScope{ScopeWorkspace, ScopeOrg}}},
			{all, Action{Kind: ActionFallback, Models: []string{"anthropic/claude"}, On: []FallbackTrigger{TriggerTimeout, TriggerRateLimited}, MaxAttempts: 3, TimeoutMS: 5000}},
			{all, Action{Kind: ActionBudget, AmountUSD: MustDecimal("100.00"), Period: PeriodMonth, Aggregation: AggregationShared}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("definition\n got: %+v\nwant: %+v", got, want)
	}
	if got.Rules[4].Action.MaxInputPricePerMTok.Text != "2.50" {
		t.Errorf("price text not kept: %q", got.Rules[4].Action.MaxInputPricePerMTok.Text)
	}
}

// ParseDefinition reports to a shared collector, so a handler validating a
// whole policy body gets the definition's issues beside its own.
func TestParseDefinitionSharedErrors(t *testing.T) {
	v, err := validate.ParseJSON([]byte(`{"name":"","definition":{"target":{"kind":"workspace"},"rules":[]}}`), validate.Loc{"body"})
	if err != nil {
		t.Fatal(err)
	}
	var errs validate.Errors
	o := validate.ReadObject(v, validate.Loc{"body"}, &errs)
	if raw, ok := o.Require("name"); ok {
		validate.String(raw, validate.Loc{"body", "name"}, validate.StringRule{Min: 1}, &errs)
	}
	if raw, ok := o.Require("definition"); ok {
		ParseDefinition(raw, validate.Loc{"body", "definition"}, &errs)
	}
	o.Close()
	want := []issueKey{{"body.name", "string_too_short"}, {"body.definition.rules", "too_short"}}
	if got := issueKeys(t, errs.Err()); !slices.Equal(got, want) {
		t.Errorf("issues\n got: %v\nwant: %v", got, want)
	}
}

func TestEnumsParse(t *testing.T) {
	if k, err := ParseActionKind("price_limit"); err != nil || k != ActionPriceLimit || k.String() != "price_limit" {
		t.Errorf("ParseActionKind(price_limit) = %v, %v", k, err)
	}
	if _, err := ParseActionKind("allow"); err == nil {
		t.Error("ParseActionKind(allow) accepted")
	}
	if s, err := ParseCredentialScope("org"); err != nil || s != ScopeOrg {
		t.Errorf("ParseCredentialScope(org) = %v, %v", s, err)
	}
	if _, err := ParsePhase(""); err == nil {
		t.Error("ParsePhase(\"\") accepted")
	}
	if _, err := NewDecimal("1e3"); err == nil {
		t.Error("NewDecimal(1e3) accepted")
	}
}
