package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/gw-gateway/gw/cli/usage"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// TestNamesWhereIdsAreAccepted: keys and service accounts are reached by
// the names people gave them, against the real API; UUIDs still work, an
// ambiguous name lists the candidates' ids, an unknown one says so.
func TestNamesWhereIdsAreAccepted(t *testing.T) {
	e := newResEnv(t)

	// Inference keys.
	e.ok("inference-keys", "create", "--name", "my-app")
	k := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "get", "my-app", "-o", "json"))
	if k.Name != "my-app" || k.Status != wire.KeyActive {
		t.Fatalf("get by name: %+v", k)
	}
	byPrefix := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "get", k.Prefix, "-o", "json"))
	byID := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "get", k.ID.String(), "-o", "json"))
	if byPrefix.ID != k.ID || byID.ID != k.ID {
		t.Fatalf("by prefix %s, by id %s, want %s", byPrefix.ID, byID.ID, k.ID)
	}
	r := e.code(ExitError, "", "inference-keys", "get", "nope")
	mustContain(t, "not found", r.errOut, `no inference key named "nope"`)

	// A second active namesake makes the name ambiguous: both ids are listed.
	e.ok("inference-keys", "create", "--name", "my-app")
	r = e.code(ExitUsage, "", "inference-keys", "revoke", "my-app", "--yes")
	mustContain(t, "ambiguous", r.errOut, `"my-app" names 2 inference keys`, k.ID.String(), "pass one of their ids")
	rk := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "revoke", k.ID.String(), "--yes", "-o", "json"))
	if rk.Status != wire.KeyRevoked {
		t.Fatalf("revoke by id: %+v", rk)
	}
	// One active namesake left: the name reaches it, not the revoked one.
	other := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "revoke", "my-app", "--yes", "-o", "json"))
	if other.ID == k.ID || other.Status != wire.KeyRevoked {
		t.Fatalf("revoke by name after rotation: %+v", other)
	}

	// Management keys.
	e.ok("keys", "create", "--permissions", "workspaces.read", "--label", "ci")
	mk := decodeJSONOut[wire.ManagementKey](t, e.ok("keys", "get", "ci", "-o", "json"))
	if mk.Label != "ci" {
		t.Fatalf("get by label: %+v", mk)
	}
	// At instance scope the listing spans scopes; the label still resolves.
	inst := decodeJSONOut[wire.ManagementKey](t, e.ok("keys", "get", "ci", "--scope", "instance", "-o", "json"))
	if inst.ID != mk.ID {
		t.Fatalf("instance scope: %s, want %s", inst.ID, mk.ID)
	}
	rmk := decodeJSONOut[wire.ManagementKey](t, e.ok("keys", "revoke", "ci", "--yes", "-o", "json"))
	if rmk.ID != mk.ID || rmk.Status != wire.KeyRevoked {
		t.Fatalf("revoke by label: %+v", rmk)
	}
	r = e.code(ExitError, "", "keys", "get", "laptop")
	mustContain(t, "not found", r.errOut, `no management key named "laptop" in organization default`)

	// Service accounts.
	e.ok("service-accounts", "create", "--name", "ci-bot", "--permissions", "organizations.read")
	u := decodeJSONOut[wire.User](t, e.ok("service-accounts", "get", "ci-bot", "-o", "json"))
	if u.Name != "ci-bot" || !u.ServiceAccount {
		t.Fatalf("get by name: %+v", u)
	}
	e.ok("service-accounts", "create", "--name", "ci-bot", "--permissions", "organizations.read")
	r = e.code(ExitUsage, "", "service-accounts", "delete", "ci-bot", "--yes")
	mustContain(t, "ambiguous", r.errOut, `"ci-bot" names 2 service accounts`, u.ID.String())
	e.ok("service-accounts", "delete", u.ID.String(), "--yes")
	left := decodeJSONOut[wire.User](t, e.ok("service-accounts", "get", "ci-bot", "-o", "json"))
	if left.ID == u.ID {
		t.Fatal("a deleted service account resolved")
	}
	if out := e.ok("service-accounts", "delete", "ci-bot", "--yes"); !strings.Contains(out, left.ID.String()) {
		t.Fatalf("delete by name: %s", out)
	}
}

// TestUsageNamesForPeople: breakdowns by workspace, owner and inference
// key name their rows in tables and keep the ids in json; the dashboard's
// header names the organization the context holds by id.
func TestUsageNamesForPeople(t *testing.T) {
	e := newResEnv(t)
	key := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "create", "--name", "my-app", "-o", "json"))
	org, ws, owner := e.boot.Organization.ID, e.boot.Workspace.ID, e.boot.User.ID
	body, _ := json.Marshal(map[string]any{"events": []any{map[string]any{
		"id": uuid.NewString(), "org_id": org, "workspace_id": ws, "owner_id": owner, "inference_key_id": key.ID,
		"model": "openai/gpt-4o-mini", "provider": "openai", "input_tokens": 10, "output_tokens": 1,
		"cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": "0.001", "status": "ok", "latency_ms": 5,
		"occurred_at": "2026-03-10T09:00:00Z"}}})
	e.postAsOwner(t, "/api/v1/data-plane/usage-events", body)
	rng := []string{"usage", "report", "--start-date", "2026-03-10", "--end-date", "2026-03-10", "--by"}
	for by, want := range map[string]string{
		"workspace":     e.boot.Workspace.Name,
		"owner":         "owner@example.com",
		"inference_key": "my-app (" + key.Prefix + "…)",
	} {
		rows := tableRows(e.ok(append(rng, by)...))
		if len(rows) != 1 || rows[0][0] != want {
			t.Errorf("--by %s: rows %q, want the first cell %q", by, rows, want)
		}
		b := decodeJSONOut[wire.UsageBreakdown](t, e.ok(append(rng, by, "-o", "json")...))
		if len(b.Rows) != 1 || uuid.Validate(b.Rows[0].Key) != nil {
			t.Errorf("--by %s json: %+v, want the id", by, b.Rows)
		}
	}

	// The context holds the organization's id, as gw login stores it.
	c, err := client.New(client.Options{Server: e.url, Token: e.boot.ManagementKey.Token})
	if err != nil {
		t.Fatal(err)
	}
	to, err := usage.TUIOptions(context.Background(), c, org.String(), "", &usage.DashboardOptions{Period: "30d"})
	if err != nil {
		t.Fatal(err)
	}
	m := tui.New(to)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	header := strings.SplitN(m.View(), "\n", 2)[0]
	if !strings.Contains(header, "gw usage · "+e.boot.Organization.Name+" ·") || strings.Contains(header, org.String()) {
		t.Fatalf("dashboard header %q", header)
	}
}

// TestHelpExamples: the commands people start with show examples in
// --help (and --help touches no server).
func TestHelpExamples(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"login", "--help"}, "gw login --no-browser --org acme --workspace research"},
		{[]string{"credentials", "create", "--help"}, "gw credentials create --provider openai --label main"},
		{[]string{"inference-keys", "create", "--help"}, "GW_INFERENCE_KEY=$(gw inference-keys create --name my-app --expires-in 90d)"},
		{[]string{"usage", "--help"}, "gw usage report --by model --period month_to_date"},
	} {
		f, out, errOut := testFactory()
		if code := Run(context.Background(), f, c.args); code != ExitOK {
			t.Fatalf("gw %v: exit %d: %s", c.args, code, errOut)
		}
		mustContain(t, strings.Join(c.args, " "), out.String(), "Examples:\n", c.want)
	}
}
