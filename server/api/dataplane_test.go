package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/dataplane/spool"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
	"github.com/uptrace/bun"
)

func TestHeartbeatKeepsFirstSeen(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		dp, err := secrets.GenerateDataPlaneKey()
		if err != nil {
			t.Fatal(err)
		}
		e.must("POST", "/api/v1/data-plane/enrollments", e.ownerKey, map[string]any{"id": "dp", "public_key": dp.Public().String()})
		hb := map[string]any{"id": "dp", "version": "1", "bundle_versions": map[string]any{}, "spool_depth": 0}
		first := decodeData[wire.DataPlaneInstance](t, e.must("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb))
		again := decodeData[wire.DataPlaneInstance](t, e.must("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb))
		if !again.FirstSeenAt.Equal(first.FirstSeenAt) || again.LastSeenAt.Before(first.LastSeenAt) {
			t.Fatalf("first %+v, again %+v", first, again)
		}
	})
}

// TestHeartbeatIsTheEnrolledPlanes (issue 27, row 4): a heartbeat speaks
// for the data plane enrolled with the caller's key, and reports bundles
// only of its organizations, at versions that exist; anything else is
// refused, recorded nowhere and audited, in the log of the organization
// reached for.
func TestHeartbeatIsTheEnrolledPlanes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		orgA, orgB := e.boot.Organization.ID.String(), e.orgB.ID.String()
		enroll := func(id, org string) string {
			key := e.key("/api/v1/instance", e.ownerKey, []string{"bundles.read", "data-planes.heartbeat"}, nil).Token
			dp, err := secrets.GenerateDataPlaneKey()
			if err != nil {
				t.Fatal(err)
			}
			e.must("POST", "/api/v1/data-plane/enrollments", key, map[string]any{"id": id, "public_key": dp.Public().String()})
			if org != "" {
				e.must("POST", "/api/v1/instance/data-planes/enrollments/"+id+"/approve", e.ownerKey, map[string]any{"organizations": []string{org}})
			}
			return key
		}
		keyA, keyB := enroll("dp-a", "default"), enroll("dp-b", "b")
		keyPending := enroll("dp-pending", "")
		latest := func(key, id, org string) int64 {
			for _, b := range decodeData[wire.DataPlaneBundles](t, e.must("GET", "/api/v1/data-plane/bundles?data_plane_id="+id, key, nil)).Bundles {
				if b.OrgID.String() == org {
					return b.Version
				}
			}
			t.Fatalf("no bundle of %s", org)
			return 0
		}
		vB := latest(keyB, "dp-b", orgB)
		beat := func(key, id, version string, versions map[string]any) (int, []byte) {
			return e.do("POST", "/api/v1/data-plane/heartbeats", key, map[string]any{"id": id, "version": version, "bundle_versions": versions, "spool_depth": 0})
		}
		if code, raw := beat(keyB, "dp-b", "1.0", map[string]any{orgB: vB}); code != 200 {
			t.Fatalf("dp-b's own heartbeat: %d %s", code, raw)
		}
		for _, c := range []struct {
			name, key, id string
			versions      map[string]any
			want          int
			issue         string
		}{
			{"as another data plane", keyA, "dp-b", map[string]any{orgB: 999}, 403, ""},
			{"as another data plane, reporting nothing", keyA, "dp-b", map[string]any{}, 403, ""},
			{"as a data plane never enrolled", keyA, "dp-nobody", map[string]any{}, 404, ""},
			{"an organization it is not enrolled for", keyA, "dp-a", map[string]any{orgB: vB}, 422, "body.bundle_versions." + orgB + ":value_error"},
			{"a bundle version never published", keyB, "dp-b", map[string]any{orgB: vB + 1}, 422, "body.bundle_versions." + orgB + ":value_error"},
			{"a pending data plane holding a bundle", keyPending, "dp-pending", map[string]any{orgA: 1}, 422, "body.bundle_versions." + orgA + ":value_error"},
		} {
			code, raw := beat(c.key, c.id, "evil", c.versions)
			if code != c.want || (c.issue != "" && !containsAll(issueSet(t, raw), []string{c.issue})) {
				t.Errorf("%s: %d %s, want %d %s", c.name, code, raw, c.want, c.issue)
			}
		}
		// What was refused changed nothing: dp-b is as it reported itself,
		// and no data plane shows version "evil".
		for _, d := range decodeData[[]wire.DataPlaneInstance](t, e.must("GET", "/api/v1/instance/data-planes", e.ownerKey, nil)) {
			if d.Version == "evil" || (d.ID == "dp-b" && (d.BundleVersions[orgB] != vB || len(d.BundleVersions) != 1)) || d.ID == "dp-nobody" {
				t.Errorf("after refused heartbeats: %+v", d)
			}
		}
		// Each refusal is audited; reaching for B's bundle shows in B's log.
		refused := 0
		for _, ev := range e.auditEvents() {
			if ev.Action == "data_plane.heartbeat_refused" {
				refused++
			}
		}
		if refused != 6 {
			t.Errorf("%d refusals audited, want 6", refused)
		}
		inB := 0
		for _, ev := range decodeData[[]wire.AuditEvent](t, e.must("GET", "/api/v1/organizations/b/activity?limit=200", e.ownerKey, nil)) {
			if ev.Action == "data_plane.heartbeat_refused" && ev.Target.ID == "dp-a" {
				inB++
			}
		}
		if inB != 1 {
			t.Errorf("%d refusals in organization B's log, want 1 (dp-a reaching for B's bundle)", inB)
		}
		// The real heartbeats still work.
		if code, raw := beat(keyA, "dp-a", "1.0", map[string]any{orgA: latest(keyA, "dp-a", orgA)}); code != 200 {
			t.Fatalf("dp-a's own heartbeat: %d %s", code, raw)
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

// TestIngestNamesOnlyItsOwn (issue 27, row 5): every id an event names —
// inference key, owner, provider credential, management key, the policies
// of its provenance — belongs to the event's organization (and workspace,
// where the id is workspace-scoped), and it occurred within the window
// the control plane takes; otherwise the batch is a 422 naming the member,
// nothing of it is stored, and a data plane's spool sets aside only the
// refused event.
func TestIngestNamesOnlyItsOwn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		const wsA = "/api/v1/organizations/default/workspaces/default"
		const wsB = "/api/v1/organizations/b/workspaces/main"
		e.must("POST", "/api/v1/organizations/b/workspaces", e.ownerKey, map[string]any{"name": "B main", "slug": "main"})
		e.must("POST", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{"name": "A second", "slug": "second"})
		personB := decodeData[wire.ServiceAccountBundle](t, e.must("POST", "/api/v1/organizations/b/service-accounts", e.ownerKey,
			map[string]any{"name": "b-robot", "management_key": map[string]any{"permissions": []string{"usage.read"}, "label": "ci"}})).ServiceAccount.ID
		keyOf := func(ws string, owner any) wire.InferenceKey {
			body := map[string]any{"name": "app"}
			if owner != nil {
				body["user_id"] = owner
			}
			return decodeData[wire.InferenceKey](t, e.must("POST", ws+"/inference-keys", e.ownerKey, body))
		}
		policyOf := func(ws string) uuid.UUID {
			return decodeData[wire.Policy](t, e.must("POST", ws+"/policies", e.ownerKey, policyBody("p-"+uuid.NewString()[:8]))).ID
		}
		credOf := func(prefix string) uuid.UUID {
			return decodeData[wire.ProviderCredential](t, e.must("POST", prefix+"/provider-credentials", e.ownerKey,
				map[string]any{"provider": "anthropic", "label": "y-" + uuid.NewString()[:8], "secret": "sk-ant-secret"})).ID
		}
		keyA, keyA2, keyB := keyOf(wsA, nil), keyOf("/api/v1/organizations/default/workspaces/second", nil), keyOf(wsB, personB)
		policyA, policyB := policyOf(wsA), policyOf(wsB)
		credA, credB, credPlatform := credOf(wsA), credOf("/api/v1/organizations/b"), credOf("/api/v1/instance")
		mkeyB := e.key("/api/v1/organizations/b", e.ownerKey, []string{"usage.read"}, nil).ID
		mkeyA := e.key(wsA, e.ownerKey, []string{"usage.read"}, nil).ID

		dpKey := e.key("/api/v1/instance", e.ownerKey, []string{"usage.ingest", "data-planes.heartbeat"}, nil).Token
		e.must("POST", "/api/v1/data-plane/enrollments", dpKey, map[string]any{"id": "dp-usage", "public_key": e.dp.Public().String()})
		e.must("POST", "/api/v1/instance/data-planes/enrollments/dp-usage/approve", e.ownerKey, map[string]any{"organizations": []string{"default"}})

		// What a data plane of A ships: its key, the key's owner, a
		// credential and policies of the workspace.
		own := func() map[string]any {
			ev := e.usageEvent(time.Now(), "openai/gpt-4o", 10, 20, "0.000225")
			ev["inference_key_id"], ev["owner_id"], ev["provider_credential_id"] = keyA.ID, keyA.UserID, credA
			ev["provenance"] = map[string]any{"prices": nil, "bundle_version": 1,
				"policies": []any{map[string]any{"policy_id": policyA, "policy_name": "p", "rule_index": 0, "action": "models", "effect": "allow"}},
				"budgets":  []any{map[string]any{"policy_id": policyA, "policy_name": "p", "counter": "c", "period": "day", "aggregation": "shared", "amount_usd": "1"}}}
			return ev
		}
		with := func(changes map[string]any) map[string]any {
			ev := own()
			for k, v := range changes {
				if v == nil {
					delete(ev, k)
				} else {
					ev[k] = v
				}
			}
			return ev
		}
		withPolicy := func(member string, id uuid.UUID) map[string]any {
			ev := own()
			p := ev["provenance"].(map[string]any)[member].([]any)[0].(map[string]any)
			p["policy_id"] = id
			return ev
		}
		playground := func(mkey uuid.UUID, owner any) map[string]any {
			return with(map[string]any{"inference_key_id": nil, "management_key_id": mkey, "owner_id": owner})
		}
		for _, c := range []struct {
			name  string
			event map[string]any
			issue string // "" for a 200
		}{
			{"its own ids", own(), ""},
			{"a platform credential", with(map[string]any{"provider_credential_id": credPlatform}), ""},
			{"ids that name nothing (deleted since)", with(map[string]any{"provider_credential_id": uuid.New(), "inference_key_id": uuid.New()}), ""},
			{"a workspace key of the organization, its owner", playground(mkeyA, e.boot.User.ID), ""},
			{"B's inference key", with(map[string]any{"inference_key_id": keyB.ID}), "inference_key_id"},
			{"a key of another workspace of A", with(map[string]any{"inference_key_id": keyA2.ID}), "inference_key_id"},
			{"B's person as the owner of A's key", with(map[string]any{"owner_id": personB}), "owner_id"},
			{"B's person, no key", with(map[string]any{"inference_key_id": nil, "owner_id": personB}), "owner_id"},
			{"B's provider credential", with(map[string]any{"provider_credential_id": credB}), "provider_credential_id"},
			{"B's management key", playground(mkeyB, e.boot.User.ID), "management_key_id"},
			{"B's policy in the provenance's rules", withPolicy("policies", policyB), "provenance.policies.0.policy_id"},
			{"B's policy in the provenance's budgets", withPolicy("budgets", policyB), "provenance.budgets.0.policy_id"},
			{"year 0000", with(map[string]any{"occurred_at": "0000-01-01T00:00:00Z"}), "occurred_at"},
			{"2030", with(map[string]any{"occurred_at": "2030-01-01T00:00:00Z"}), "occurred_at"},
			{"ten minutes ahead", with(map[string]any{"occurred_at": time.Now().Add(10 * time.Minute).UTC().Format(time.RFC3339)}), "occurred_at"},
			{"401 days ago", with(map[string]any{"occurred_at": time.Now().Add(-401 * 24 * time.Hour).UTC().Format(time.RFC3339)}), "occurred_at"},
		} {
			for _, cred := range []string{dpKey, e.ownerKey} {
				// The refused event is the second: the whole batch is refused.
				code, raw := e.do("POST", "/api/v1/data-plane/usage-events", cred, map[string]any{"events": []any{own(), c.event}})
				switch {
				case c.issue == "" && code != 200:
					t.Errorf("%s: %d %s", c.name, code, raw)
				case c.issue != "" && (code != 422 || !containsAll(issueSet(t, raw), []string{"body.events.1." + c.issue + ":value_error"})):
					t.Errorf("%s: %d %s, want 422 naming events.1.%s", c.name, code, raw, c.issue)
				}
			}
		}
		// Only the accepted batches were stored: 4 cases, each a fresh event
		// twice and the case's own event once (the second time a duplicate).
		report := e.must("GET", "/api/v1/organizations/default/reports/usage?period=7d", e.ownerKey, nil)
		if got := jsonPath(t, report, "data.totals.requests"); got != float64(12) {
			t.Errorf("organization A's requests: %v, want 12", got)
		}
		if got := jsonPath(t, e.must("GET", "/api/v1/organizations/b/reports/usage?period=7d", e.ownerKey, nil), "data.totals.requests"); got != float64(0) {
			t.Errorf("organization B's requests: %v, want 0", got)
		}

		// A data plane's spool ships the batch, is refused, and sets aside
		// only the foreign event: the rest lands.
		c, err := client.New(client.Options{Server: e.srv.URL, Token: dpKey})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "usage.spool")
		sp, err := spool.Open(path, func(ctx context.Context, evs []json.RawMessage) error {
			_, err := c.IngestUsageLines(ctx, evs)
			return err
		}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		var events []wire.UsageEventIn
		for _, ev := range []map[string]any{own(), with(map[string]any{"inference_key_id": keyB.ID}), own()} {
			raw, _ := json.Marshal(ev)
			var in wire.UsageEventIn
			if err := json.Unmarshal(raw, &in); err != nil {
				t.Fatal(err)
			}
			events = append(events, in)
			sp.Record(in)
		}
		if err := sp.Ship(context.Background()); err != nil {
			t.Fatal(err)
		}
		rejected, err := os.ReadFile(path + ".rejected")
		if err != nil || strings.Count(string(rejected), "\n") != 1 || !strings.Contains(string(rejected), events[1].ID.String()) {
			t.Fatalf("set aside: %q %v", rejected, err)
		}
		report = e.must("GET", "/api/v1/organizations/default/reports/usage?period=7d", e.ownerKey, nil)
		if got := jsonPath(t, report, "data.totals.requests"); got != float64(14) {
			t.Errorf("organization A's requests after the spool: %v, want 14", got)
		}
	})
}

// A remote data plane ships a tool call's arguments (mcp_audit_arguments)
// in its event: taken from a tool call's event as an object, refused on
// another endpoint's or when not an object, and the audit row keeps them
// only while the workspace records them (here: on, through the API).
func TestIngestCarriesToolArguments(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ev := func(args any) map[string]any {
			m := e.usageEvent(time.Now(), "mcp/up/echo", 0, 0, "0")
			m["provider"], m["endpoint"], m["tool_arguments"], m["tool_arguments_bytes"] = "mcp", "mcp", args, 64
			return m
		}
		ws := "/api/v1/organizations/" + e.boot.Organization.Slug + "/workspaces/" + e.boot.Workspace.Slug
		e.must("PATCH", ws, e.ownerKey, map[string]any{"mcp_audit_arguments": true})
		e.must("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{ev(map[string]any{"q": "is:open", "n": 2})}})
		found := false
		for _, a := range e.auditEvents() {
			if a.Action == "mcp.tool_called" {
				args, _ := a.Details["arguments"].(map[string]any)
				found = args["q"] == "is:open" && args["n"] == float64(2)
			}
		}
		if !found {
			t.Fatalf("no audit row with the arguments: %+v", e.auditEvents())
		}
		code, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{ev([]any{1})}})
		if code != 422 || !containsAll(issueSet(t, raw), []string{"body.events.0.tool_arguments:dict_type"}) {
			t.Fatalf("arguments not an object: %d %s", code, raw)
		}
		chat := ev(map[string]any{"q": 1})
		chat["endpoint"] = "chat.completions"
		code, raw = e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{chat}})
		if code != 422 || !containsAll(issueSet(t, raw), []string{"body.events.0.tool_arguments:value_error"}) {
			t.Fatalf("arguments on a model call: %d %s", code, raw)
		}
	})
}
