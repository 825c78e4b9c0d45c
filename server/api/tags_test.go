package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

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
