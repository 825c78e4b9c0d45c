package policy

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/uuid"
)

func TestMarshalDefinitionExactMembers(t *testing.T) {
	tr := true
	d := Definition{
		Target: Target{Kind: TargetSelectedKeys, KeyIDs: []string{"key-1"}},
		Rules: []Rule{
			{Match{Kind: MatchRequest}, Action{Kind: ActionModels, Names: []string{"openai/gpt-4o"}}},
			{Match{Kind: MatchRequest, Models: []string{"m"}, Stream: &tr, Capabilities: []Capability{CapabilityReasoning}}, Action{Kind: ActionDeny, Message: "no"}},
			{Match{Kind: MatchAllRequests, Models: []string{"ignored"}}, Action{Kind: ActionStrictParameters, Names: []string{"ignored"}}},
			{Match{Kind: MatchAllRequests}, Action{Kind: ActionPriceLimit, MaxInputPricePerMTok: MustDecimal("2.50"), MaxOutputPricePerMTok: MustDecimal("10")}},
			{Match{Kind: MatchAllRequests}, Action{Kind: ActionRequestLimits, MaxOutputTokens: 512}},
			{Match{Kind: MatchAllRequests}, Action{Kind: ActionCredentialAccess, Scopes: []CredentialScope{ScopeOrg}}},
			{Match{Kind: MatchAllRequests}, Action{Kind: ActionFallback, Models: []string{"a/b"}, On: []FallbackTrigger{TriggerTimeout}, MaxAttempts: 2, TimeoutMS: 100}},
			{Match{Kind: MatchAllRequests}, Action{Kind: ActionBudget, AmountUSD: MustDecimal("100.00"), Period: PeriodDay, Aggregation: AggregationPerKey}},
			{Match{Kind: MatchAllRequests}, Action{Kind: ActionProviders, Names: []string{"openai"}}},
		},
	}
	got, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"target":{"kind":"selected_keys","key_ids":["key-1"]},"rules":[` +
		`{"match":{"kind":"request","models":[],"stream":null,"capabilities":[]},"action":{"kind":"models","names":["openai/gpt-4o"]}},` +
		`{"match":{"kind":"request","models":["m"],"stream":true,"capabilities":["reasoning"]},"action":{"kind":"deny","message":"no"}},` +
		`{"match":{"kind":"all_requests"},"action":{"kind":"strict_parameters"}},` +
		`{"match":{"kind":"all_requests"},"action":{"kind":"price_limit","max_input_price_per_mtok":"2.50","max_output_price_per_mtok":"10"}},` +
		`{"match":{"kind":"all_requests"},"action":{"kind":"request_limits","max_output_tokens":512}},` +
		`{"match":{"kind":"all_requests"},"action":{"kind":"credential_access","scopes":["org"]}},` +
		`{"match":{"kind":"all_requests"},"action":{"kind":"fallback","models":["a/b"],"on":["timeout"],"max_attempts":2,"timeout_ms":100}},` +
		`{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"100.00","period":"day","aggregation":"per_key"}},` +
		`{"match":{"kind":"all_requests"},"action":{"kind":"providers","names":["openai"]}}]}`
	if string(got) != want {
		t.Errorf("marshal\n got: %s\nwant: %s", got, want)
	}
}

func TestMarshalTargets(t *testing.T) {
	id := uuid.MustParse("6f9619ff-8b86-4011-b42d-00c04fc964ff")
	tests := []struct {
		target Target
		want   string
	}{
		{Target{Kind: TargetWorkspace, KeyIDs: []string{"ignored"}}, `{"kind":"workspace"}`},
		{Target{Kind: TargetSelectedUsers, UserIDs: []uuid.UUID{id}}, `{"kind":"selected_users","user_ids":["6f9619ff-8b86-4011-b42d-00c04fc964ff"]}`},
		{Target{Kind: TargetSelectedKeys}, `{"kind":"selected_keys","key_ids":[]}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.target)
		if err != nil || string(got) != tt.want {
			t.Errorf("marshal %+v = %s, %v; want %s", tt.target, got, err, tt.want)
		}
	}
	if _, err := json.Marshal(Target{Kind: "org"}); err == nil {
		t.Error("marshalled a target of unknown kind")
	}
	if _, err := json.Marshal(Action{}); err == nil {
		t.Error("marshalled an action without kind")
	}
}

func TestDefinitionRoundTrip(t *testing.T) {
	body := defJSON(`{"kind":"selected_users","user_ids":["6F9619FF-8B86-4011-B42D-00C04FC964FF"]}`,
		`{"match":{"kind":"request","stream":null,"models":["openai/gpt-4o"]},"action":{"kind":"models","names":["openai/gpt-4o"]}}`,
		priceJSON(`"007.50"`, `"0"`),
		budgetJSON(`"1.000"`, `"day"`, `"per_key"`),
		act("request_limits", `"max_output_tokens":2.0`),
	)
	first := mustParse(t, body)
	data, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	second := mustParse(t, string(data))
	if !reflect.DeepEqual(first, second) {
		t.Errorf("round trip changed the definition\nfirst:  %+v\nsecond: %+v", first, second)
	}
	var third Definition
	if err := json.Unmarshal(data, &third); err != nil || !reflect.DeepEqual(first, third) {
		t.Errorf("json.Unmarshal = %+v, %v", third, err)
	}
}

// encoding/json would otherwise match members case-insensitively and drop
// unknown ones; a Definition must refuse both.
func TestUnmarshalDefinitionIsStrict(t *testing.T) {
	for _, body := range []string{
		`{"Target":{"kind":"workspace"},"rules":[` + denyRule + `]}`,
		`{"target":{"kind":"workspace"},"rules":[` + denyRule + `],"extra":1}`,
		`null`,
	} {
		var d Definition
		if err := json.Unmarshal([]byte(body), &d); err == nil {
			t.Errorf("json.Unmarshal(%s) accepted: %+v", body, d)
		}
	}
}
