package api_test

import (
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
	"github.com/uptrace/bun"
)

func TestHeartbeatKeepsFirstSeen(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		hb := map[string]any{"id": "dp", "version": "1", "bundle_versions": map[string]any{}, "spool_depth": 0}
		first := decodeData[wire.DataPlaneInstance](t, e.must("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb))
		again := decodeData[wire.DataPlaneInstance](t, e.must("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb))
		if !again.FirstSeenAt.Equal(first.FirstSeenAt) || again.LastSeenAt.Before(first.LastSeenAt) {
			t.Fatalf("first %+v, again %+v", first, again)
		}
	})
}

func TestIngestBoundsTokenCounts(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ev := e.usageEvent(time.Now(), "openai/gpt-4o", 1<<62, 1, "1")
		code, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{ev}})
		if code != 422 || !containsAll(issueSet(t, raw), []string{"body.events.0.input_tokens:less_than_equal"}) {
			t.Fatalf("huge token count: %d %s", code, raw)
		}
	})
}

// TestIngestStaysInReach: usage is recorded only where the caller may
// record it. A data plane enrolled for one organization cannot bill
// another, an organization's key cannot record usage at all, and no event
// may put one organization's usage in another's workspace.
func TestIngestStaysInReach(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		wsB := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/b/workspaces", e.ownerKey, map[string]any{"name": "B main", "slug": "main"}))
		dpKey := e.key("/api/v1/instance", e.ownerKey, []string{"usage.ingest", "data-planes.heartbeat"}, nil).Token
		e.must("POST", "/api/v1/data-plane/enrollments", dpKey, map[string]any{"id": "dp-usage", "public_key": e.dp.Public().String()})
		e.must("POST", "/api/v1/instance/data-planes/enrollments/dp-usage/approve", e.ownerKey, map[string]any{"organizations": []string{"default"}})
		orgKey := e.key("/api/v1/organizations/default", e.ownerKey, []string{"usage.ingest"}, nil).Token

		ownEvent := func() map[string]any { return e.usageEvent(time.Now(), "openai/gpt-4o", 10, 20, "0.000225") }
		inB := func() map[string]any {
			ev := ownEvent()
			ev["org_id"], ev["workspace_id"] = e.orgB.ID, wsB.ID
			return ev
		}
		bWorkspaceInA := func() map[string]any {
			ev := ownEvent()
			ev["workspace_id"] = wsB.ID
			return ev
		}
		for _, c := range []struct {
			name   string
			cred   string
			events []map[string]any
			issue  string // the validation issue expected, "" for a 200, "403" for that status
		}{
			{"the data plane records for its organization", dpKey, []map[string]any{ownEvent()}, ""},
			{"the data plane records for another organization", dpKey, []map[string]any{ownEvent(), inB()}, "body.events.1.org_id:value_error"},
			{"an organization's key records at all", orgKey, []map[string]any{ownEvent()}, "403"},
			{"an event in another organization's workspace", e.ownerKey, []map[string]any{bWorkspaceInA()}, "body.events.0.workspace_id:value_error"},
			{"the instance's own key records anywhere", e.ownerKey, []map[string]any{inB()}, ""},
		} {
			code, raw := e.do("POST", "/api/v1/data-plane/usage-events", c.cred, map[string]any{"events": c.events})
			switch {
			case c.issue == "" && code != 200, c.issue == "403" && code != 403:
				t.Fatalf("%s: %d %s", c.name, code, raw)
			case c.issue == "" || c.issue == "403":
			case c.issue != "" && (code != 422 || !containsAll(issueSet(t, raw), []string{c.issue})):
				t.Fatalf("%s: %d %s, want 422 with %s", c.name, code, raw, c.issue)
			}
		}
		// Nothing of a refused batch was stored: org B has only the
		// instance key's event.
		report := e.must("GET", "/api/v1/organizations/b/reports/usage", e.ownerKey, nil)
		if got := jsonPath(t, report, "data.totals.requests"); got != float64(1) {
			t.Fatalf("org B's requests: %v, want 1 (%s)", got, report)
		}
	})
}
