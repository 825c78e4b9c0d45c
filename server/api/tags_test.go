package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/wire"
)

func TestInferenceKeyTags(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		raw := e.must("POST", wsBase+"/inference-keys", e.ownerKey, map[string]any{"name": "search-api",
			"tags": map[string]any{"team": "search", "env": "prod"}})
		k := decodeData[wire.InferenceKey](t, raw)
		if k.Tags["team"] != "search" || k.Tags["env"] != "prod" || len(k.Tags) != 2 {
			t.Fatalf("create: %s", raw)
		}
		got := decodeData[wire.InferenceKey](t, e.must("GET", wsBase+"/inference-keys/"+k.ID.String(), e.ownerKey, nil))
		if got.Tags["team"] != "search" {
			t.Fatalf("get: %+v", got.Tags)
		}
		list := decodeData[[]wire.InferenceKey](t, e.must("GET", wsBase+"/inference-keys", e.ownerKey, nil))
		if len(list) != 1 || list[0].Tags["env"] != "prod" {
			t.Fatalf("list: %+v", list)
		}
		// A key without tags shows an empty object, never null.
		plain := e.must("POST", wsBase+"/inference-keys", e.ownerKey, map[string]any{"name": "plain"})
		if !strings.Contains(string(plain), `"tags":{}`) {
			t.Fatalf("a key without tags: %s", plain)
		}

		// PATCH replaces the set whole; a rename leaves it; null clears it.
		raw = e.must("PATCH", wsBase+"/inference-keys/"+k.ID.String(), e.ownerKey, map[string]any{"tags": map[string]any{"team": "ads"}})
		if k := decodeData[wire.InferenceKey](t, raw); len(k.Tags) != 1 || k.Tags["team"] != "ads" {
			t.Fatalf("patch tags: %s", raw)
		}
		raw = e.must("PATCH", wsBase+"/inference-keys/"+k.ID.String(), e.ownerKey, map[string]any{"name": "renamed"})
		if k := decodeData[wire.InferenceKey](t, raw); k.Tags["team"] != "ads" {
			t.Fatalf("a rename changed the tags: %s", raw)
		}
		raw = e.must("PATCH", wsBase+"/inference-keys/"+k.ID.String(), e.ownerKey, map[string]any{"tags": nil})
		if k := decodeData[wire.InferenceKey](t, raw); len(k.Tags) != 0 {
			t.Fatalf("clearing: %s", raw)
		}
		if raw := e.must("GET", "/api/v1/organizations/default/activity?limit=5", e.ownerKey, nil); !strings.Contains(string(raw), `"ads"`) {
			t.Fatalf("the audit log does not record the tags: %s", raw)
		}

		many := map[string]any{}
		for i := range 21 {
			many[string(rune('a'+i))] = "v"
		}
		cases := []struct {
			name string
			tags any
			want string
		}{
			{"not an object", []string{"team"}, "body.tags:model_type"},
			{"too many", many, "body.tags:too_long"},
			{"upper-case key", map[string]any{"Team": "x"}, "body.tags.Team:value_error"},
			{"key starting with a dot", map[string]any{".team": "x"}, "body.tags..team:value_error"},
			{"key too long", map[string]any{strings.Repeat("k", 65): "x"}, "body.tags." + strings.Repeat("k", 65) + ":value_error"},
			{"empty value", map[string]any{"team": ""}, "body.tags.team:value_error"},
			{"value too long", map[string]any{"team": strings.Repeat("v", 129)}, "body.tags.team:value_error"},
			{"control character", map[string]any{"team": "a\tb"}, "body.tags.team:value_error"},
			{"not a string", map[string]any{"team": 3}, "body.tags.team:string_type"},
		}
		for _, c := range cases {
			for _, req := range []struct{ method, path string }{
				{"POST", wsBase + "/inference-keys"}, {"PATCH", wsBase + "/inference-keys/" + k.ID.String()},
			} {
				st, raw := e.do(req.method, req.path, e.ownerKey, map[string]any{"name": "x", "tags": c.tags})
				if st != http.StatusUnprocessableEntity || !containsAll(issueSet(t, raw), []string{c.want}) {
					t.Errorf("%s %s: %d %s", c.name, req.method, st, raw)
				}
			}
		}
		// 20 tags at the bounds are taken.
		edge := map[string]any{strings.Repeat("k", 64): strings.Repeat("v", 128), "0.a_b-c": "with spaces é"}
		for i := range 18 {
			edge[string(rune('a'+i))] = "v"
		}
		e.must("PATCH", wsBase+"/inference-keys/"+k.ID.String(), e.ownerKey, map[string]any{"tags": edge})

		// Another organization's URL never reaches this one's key.
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		e.must("POST", "/api/v1/organizations/other/workspaces", e.ownerKey, map[string]any{"name": "W", "slug": "w"})
		for _, method := range []string{"GET", "PATCH"} {
			st, raw := e.do(method, "/api/v1/organizations/other/workspaces/w/inference-keys/"+k.ID.String(), e.ownerKey,
				map[string]any{"tags": map[string]any{"team": "stolen"}})
			if st != http.StatusNotFound {
				t.Fatalf("%s another organization's key: %d %s", method, st, raw)
			}
		}
	})
}

// Shipped events carry their tags through ingest, exactly once, and come
// back on the events list; a bad tag is refused naming it.
func TestUsageIngestCarriesTags(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now()
		ev := e.usageEvent(now, "openai/gpt-4o", 10, 20, "0.5")
		ev["tags"] = map[string]any{"team": "search", "env": "prod"}
		plain := e.usageEvent(now, "openai/gpt-4o", 1, 1, "0.25")
		batch := map[string]any{"events": []any{ev, plain}}
		for i, want := range []wire.UsageIngestResult{{Accepted: 2}, {Duplicates: 2}} {
			if res := decodeData[wire.UsageIngestResult](t, e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, batch)); res != want {
				t.Fatalf("ingest %d: %+v", i, res)
			}
		}
		list := decodeData[[]wire.UsageEvent](t, e.must("GET", "/api/v1/organizations/default/usage-events", e.ownerKey, nil))
		tagged := 0
		for _, ev := range list {
			if ev.Tags == nil {
				t.Fatalf("an event without tags shows null: %+v", ev)
			}
			if ev.Tags["team"] == "search" && ev.Tags["env"] == "prod" {
				tagged++
			}
		}
		if len(list) != 2 || tagged != 1 {
			t.Fatalf("events: %+v", list)
		}
		// A replay counts nothing twice: the report by tag says 1 request.
		b := decodeData[wire.UsageBreakdown](t, e.must("GET", "/api/v1/organizations/default/reports/usage/breakdown?by=tag:team&period=today", e.ownerKey, nil))
		if len(b.Rows) != 2 || b.Rows[0].Key != "search" || b.Rows[0].Requests != 1 || !b.Rows[1].NoValue || b.Rows[1].Requests != 1 {
			t.Fatalf("breakdown after a replay: %+v", b.Rows)
		}

		bad := e.usageEvent(now, "openai/gpt-4o", 1, 1, "0.1")
		bad["tags"] = map[string]any{"Team": "x", "env": ""}
		st, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{bad}})
		if st != 422 || !containsAll(issueSet(t, raw), []string{"body.events.0.tags.Team:value_error", "body.events.0.tags.env:value_error"}) {
			t.Fatalf("bad tags: %d %s", st, raw)
		}
	})
}

// The report takes tag=KEY:VALUE filters (all must match) and the
// breakdown by=tag:KEY, at an organization's and a workspace's scope;
// another organization's tags are never counted.
func TestUsageReportByTag(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		now := time.Now()
		ev := func(cost string, tags map[string]any) map[string]any {
			m := e.usageEvent(now, "openai/gpt-4o", 1, 1, cost)
			if tags != nil {
				m["tags"] = tags
			}
			return m
		}
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{
			ev("1", map[string]any{"team": "search", "env": "prod"}),
			ev("2", map[string]any{"team": "search", "env": "staging"}),
			ev("4", map[string]any{"team": "ads", "env": "prod"}),
			ev("8", map[string]any{"env": "prod"}),
			ev("16", nil),
		}})
		// Another organization's events with the same tags.
		other := decodeData[wire.Organization](t, e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"}))
		ws := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/other/workspaces", e.ownerKey, map[string]any{"name": "W", "slug": "w"}))
		foreign := ev("32", map[string]any{"team": "search", "env": "prod"})
		foreign["org_id"], foreign["workspace_id"] = other.ID, ws.ID
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{foreign}})

		for _, base := range []string{"/api/v1/organizations/default", wsBase} {
			raw := e.must("GET", base+"/reports/usage/breakdown?period=today&by=tag:team", e.ownerKey, nil)
			b := decodeData[wire.UsageBreakdown](t, raw)
			if b.By != "tag:team" || len(b.Rows) != 3 || !b.Rows[0].NoValue || b.Rows[0].CostUSD != "24" ||
				b.Rows[1].Key != "ads" || b.Rows[1].CostUSD != "4" || b.Rows[2].Key != "search" || b.Rows[2].CostUSD != "3" {
				t.Fatalf("%s by tag:team: %s", base, raw)
			}
			if !strings.Contains(string(raw), `"key":null`) {
				t.Fatalf("the row without the tag has no null key: %s", raw)
			}
			r := decodeData[wire.UsageReport](t, e.must("GET", base+"/reports/usage?period=today&tag=team:search&tag=env:prod", e.ownerKey, nil))
			if r.Totals.Requests != 1 || r.Totals.CostUSD != "1" {
				t.Fatalf("%s two tag filters: %+v", base, r.Totals)
			}
			b = decodeData[wire.UsageBreakdown](t, e.must("GET", base+"/reports/usage/breakdown?period=today&by=tag:team&tag=env:prod", e.ownerKey, nil))
			if len(b.Rows) != 3 || b.Rows[0].CostUSD != "8" || b.Rows[1].CostUSD != "4" || b.Rows[2].CostUSD != "1" {
				t.Fatalf("%s by tag:team where env=prod: %+v", base, b.Rows)
			}
			b = decodeData[wire.UsageBreakdown](t, e.must("GET", base+"/reports/usage/breakdown?period=today&by=model&tag=team:ads", e.ownerKey, nil))
			if len(b.Rows) != 1 || b.Rows[0].CostUSD != "4" {
				t.Fatalf("%s by model where team=ads: %+v", base, b.Rows)
			}
		}
		evs := decodeData[[]wire.UsageEvent](t, e.must("GET", "/api/v1/organizations/default/usage-events?tag=team:search&tag=env:staging", e.ownerKey, nil))
		if len(evs) != 1 || evs[0].CostUSD != "2" {
			t.Fatalf("events by tag: %+v", evs)
		}
		r := decodeData[wire.UsageReport](t, e.must("GET", "/api/v1/organizations/other/reports/usage?period=today&tag=team:search", e.ownerKey, nil))
		if r.Totals.Requests != 1 || r.Totals.CostUSD != "32" {
			t.Fatalf("the other organization: %+v", r.Totals)
		}
		for q, want := range map[string]string{
			"tag=team":               "query.tag.0:value_error",
			"tag=Team:x":             "query.tag.0:value_error",
			"tag=team:":              "query.tag.0:value_error",
			"tag=team:a&tag=env:%09": "query.tag.1:value_error",
			"by=tag:Team":            "query.by:value_error",
			"by=tag:":                "query.by:value_error",
		} {
			path := "/api/v1/organizations/default/reports/usage/breakdown?" + q
			st, raw := e.do("GET", path, e.ownerKey, nil)
			if st != 422 || !containsAll(issueSet(t, raw), []string{want}) {
				t.Errorf("%s: %d %s", q, st, raw)
			}
		}
	})
}

// A workspace's required tags: set, shown, cleared, checked.
func TestWorkspaceRequiredTags(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		if raw := e.must("GET", wsBase, e.ownerKey, nil); !strings.Contains(string(raw), `"required_tags":[]`) {
			t.Fatalf("a workspace without required tags: %s", raw)
		}
		w := decodeData[wire.Workspace](t, e.must("PATCH", wsBase+"/settings", e.ownerKey, map[string]any{"required_tags": []string{"team", "feature"}}))
		if len(w.RequiredTags) != 2 || w.RequiredTags[0] != "team" {
			t.Fatalf("set: %+v", w)
		}
		w = decodeData[wire.Workspace](t, e.must("PATCH", wsBase, e.ownerKey, map[string]any{"name": "Renamed"}))
		if len(w.RequiredTags) != 2 {
			t.Fatalf("a rename dropped them: %+v", w)
		}
		for body, want := range map[string]string{
			`{"required_tags":["Team"]}`:        "body.required_tags.0:value_error",
			`{"required_tags":["team","team"]}`: "body.required_tags.1:value_error",
			`{"required_tags":"team"}`:          "body.required_tags:list_type",
		} {
			st, raw := e.do("PATCH", wsBase, e.ownerKey, body)
			if st != 422 || !containsAll(issueSet(t, raw), []string{want}) {
				t.Errorf("%s: %d %s", body, st, raw)
			}
		}
		w = decodeData[wire.Workspace](t, e.must("PATCH", wsBase, e.ownerKey, map[string]any{"required_tags": nil}))
		if len(w.RequiredTags) != 0 {
			t.Fatalf("cleared: %+v", w)
		}
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		if st, _ := e.do("PATCH", "/api/v1/organizations/other/workspaces/"+w.ID.String(), e.ownerKey, map[string]any{"required_tags": []string{"x"}}); st != 404 {
			t.Fatalf("another organization's workspace: %d", st)
		}
	})
}

// A workspace's tag values (issue 28): set, shown, kept by other changes,
// checked, cleared (the bundle carries them: publish's tests).
func TestWorkspaceTagValues(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		if raw := e.must("GET", wsBase+"/settings", e.ownerKey, nil); !strings.Contains(string(raw), `"tag_values":{}`) {
			t.Fatalf("a workspace without tag values: %s", raw)
		}
		w := decodeData[wire.Workspace](t, e.must("PATCH", wsBase+"/settings", e.ownerKey,
			map[string]any{"tag_values": map[string]any{"team": []string{"ads", "search"}, "env": []string{"prod"}}}))
		if len(w.TagValues) != 2 || !slices.Equal(w.TagValues["team"], []string{"ads", "search"}) {
			t.Fatalf("set: %+v", w.TagValues)
		}
		w = decodeData[wire.Workspace](t, e.must("PATCH", wsBase, e.ownerKey, map[string]any{"required_tags": []string{"team"}}))
		if len(w.TagValues) != 2 {
			t.Fatalf("another change dropped them: %+v", w)
		}
		many := map[string]any{}
		for i := range 21 {
			many[string(rune('a'+i))] = []string{"v"}
		}
		manyJSON, _ := json.Marshal(map[string]any{"tag_values": many})
		for body, want := range map[string]string{
			`{"tag_values":{"Team":["ads"]}}`:       "body.tag_values.Team:value_error",
			`{"tag_values":{"team":[]}}`:            "body.tag_values.team:too_short",
			`{"tag_values":{"team":["ads","ads"]}}`: "body.tag_values.team.1:value_error",
			`{"tag_values":{"team":["a\tb"]}}`:      "body.tag_values.team.0:value_error",
			`{"tag_values":{"team":"ads"}}`:         "body.tag_values.team:list_type",
			`{"tag_values":["team"]}`:               "body.tag_values:model_type",
			string(manyJSON):                        "body.tag_values:too_long",
		} {
			st, raw := e.do("PATCH", wsBase+"/settings", e.ownerKey, body)
			if st != 422 || !containsAll(issueSet(t, raw), []string{want}) {
				t.Errorf("%s: %d %s", body, st, raw)
			}
		}
		w = decodeData[wire.Workspace](t, e.must("PATCH", wsBase, e.ownerKey, map[string]any{"tag_values": nil}))
		if len(w.TagValues) != 0 {
			t.Fatalf("cleared: %+v", w)
		}
		if st, _ := e.do("PATCH", "/api/v1/organizations/default/workspaces/"+uuid.NewString()+"/settings", e.ownerKey,
			map[string]any{"tag_values": map[string]any{"team": []string{"x"}}}); st != 404 {
			t.Fatalf("an unknown workspace: %d", st)
		}
	})
}

// A budget for a tag is a selected_keys policy with a shared budget rule,
// whose key list follows the keys carrying the tag.
func TestTagBudgets(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		key := func(name string, tags map[string]any) wire.InferenceKey {
			return decodeData[wire.InferenceKey](t, e.must("POST", wsBase+"/inference-keys", e.ownerKey, map[string]any{"name": name, "tags": tags}))
		}
		keyIDs := func(policyID string) []string {
			p := decodeData[wire.Policy](t, e.must("GET", wsBase+"/policies/"+policyID, e.ownerKey, nil))
			var def struct {
				Target struct {
					Kind   string   `json:"kind"`
					KeyIDs []string `json:"key_ids"`
				} `json:"target"`
				Rules []struct {
					Action map[string]any `json:"action"`
				} `json:"rules"`
			}
			if err := jsonUnmarshal(p.Definition, &def); err != nil || def.Target.Kind != "selected_keys" || len(def.Rules) != 1 ||
				def.Rules[0].Action["aggregation"] != "shared" || def.Rules[0].Action["kind"] != "budget" {
				t.Fatalf("policy %s: %s", policyID, p.Definition)
			}
			return def.Target.KeyIDs
		}
		a := key("a", map[string]any{"team": "search"})
		key("b", map[string]any{"team": "ads"})
		raw := e.must("POST", wsBase+"/tag-budgets", e.ownerKey, map[string]any{"tag_key": "team", "tag_value": "search", "amount_usd": "100", "period": "month"})
		tb := decodeData[wire.TagBudget](t, raw)
		if tb.Policy.Name != "budget-team-search" || tb.TagKey != "team" || !tb.Policy.Enabled {
			t.Fatalf("create: %s", raw)
		}
		pid := tb.PolicyID.String()
		if got := keyIDs(pid); len(got) != 2 || got[0] != "tag:team=search" || got[1] != a.ID.String() {
			t.Fatalf("key list: %v", got)
		}
		// A key gaining the tag joins; one losing it leaves; a revoked one leaves.
		c := key("c", map[string]any{"team": "search", "env": "prod"})
		if got := keyIDs(pid); len(got) != 3 {
			t.Fatalf("after issuing a tagged key: %v", got)
		}
		e.must("PATCH", wsBase+"/inference-keys/"+a.ID.String(), e.ownerKey, map[string]any{"tags": map[string]any{"team": "ads"}})
		if got := keyIDs(pid); len(got) != 2 || got[1] != c.ID.String() {
			t.Fatalf("after re-tagging a key: %v", got)
		}
		e.must("POST", wsBase+"/inference-keys/"+c.ID.String()+"/revoke", e.ownerKey, nil)
		if got := keyIDs(pid); len(got) != 1 || got[0] != "tag:team=search" {
			t.Fatalf("after revoking a key: %v", got)
		}
		list := decodeData[[]wire.TagBudget](t, e.must("GET", wsBase+"/tag-budgets", e.ownerKey, nil))
		if len(list) != 1 || list[0].PolicyID != tb.PolicyID {
			t.Fatalf("list: %+v", list)
		}
		// The budget's state is the policy's, like any other budget's.
		if raw := e.must("GET", wsBase+"/budgets", e.ownerKey, nil); !strings.Contains(string(raw), pid) {
			t.Fatalf("budgets: %s", raw)
		}
		// Deleting the policy deletes the tag budget.
		e.must("DELETE", wsBase+"/policies/"+pid, e.ownerKey, nil)
		if list := decodeData[[]wire.TagBudget](t, e.must("GET", wsBase+"/tag-budgets", e.ownerKey, nil)); len(list) != 0 {
			t.Fatalf("after deleting the policy: %+v", list)
		}
		e.must("PATCH", wsBase+"/inference-keys/"+a.ID.String(), e.ownerKey, map[string]any{"tags": map[string]any{"team": "search"}})

		for body, want := range map[string]string{
			`{"tag_key":"Team","tag_value":"x","amount_usd":"1","period":"month"}`:  "body.tag_key:string_pattern_mismatch",
			`{"tag_key":"team","tag_value":"","amount_usd":"1","period":"month"}`:   "body.tag_value:string_too_short",
			`{"tag_key":"team","tag_value":"x","amount_usd":"-1","period":"month"}`: "body.amount_usd:",
			`{"tag_key":"team","tag_value":"x","amount_usd":"1","period":"week"}`:   "body.period:literal_error",
		} {
			st, raw := e.do("POST", wsBase+"/tag-budgets", e.ownerKey, body)
			if st != 422 || !strings.Contains(strings.Join(issueSet(t, raw), " "), want) {
				t.Errorf("%s: %d %s", body, st, raw)
			}
		}
		e.must("POST", "/api/v1/instance/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"})
		ws := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/other/workspaces", e.ownerKey, map[string]any{"name": "W", "slug": "w"}))
		if st, _ := e.do("GET", "/api/v1/organizations/other/workspaces/"+e.boot.Workspace.ID.String()+"/tag-budgets", e.ownerKey, nil); st != 404 {
			t.Fatalf("another organization's workspace: %d", st)
		}
		// A budget in the other organization never lists this one's keys.
		tb = decodeData[wire.TagBudget](t, e.must("POST", "/api/v1/organizations/other/workspaces/"+ws.ID.String()+"/tag-budgets", e.ownerKey,
			map[string]any{"tag_key": "team", "tag_value": "search", "amount_usd": "1", "period": "day"}))
		if strings.Contains(string(tb.Policy.Definition), a.ID.String()) {
			t.Fatalf("a budget of another organization names this one's key: %s", tb.Policy.Definition)
		}
	})
}
