package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"github.com/gw-gateway/gw/cli/cmdutil/budgetstate"
	"github.com/gw-gateway/gw/cli/usage"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// budgetsEnv is the real server with three budgets in the default
// workspace: a roomy shared one no request has touched, a tight shared one
// and a daily per_key one that a data plane has leased and spent from,
// and usage in the last hours: 700 USD by the key "ci", 70 without a key.
type budgetsEnv struct {
	*resEnv
	key                    wire.InferenceKey
	roomy, tight, perKeyID uuid.UUID
}

const budgetPolicies = `
- name: roomy
  definition:
    target: {kind: workspace}
    rules:
      - match: {kind: all_requests}
        action: {kind: budget, amount_usd: "1000000", period: month, aggregation: shared}
- name: tight
  definition:
    target: {kind: workspace}
    rules:
      - match: {kind: all_requests}
        action: {kind: budget, amount_usd: "10", period: month, aggregation: shared}
- name: per-key
  definition:
    target: {kind: workspace}
    rules:
      - match: {kind: all_requests}
        action: {kind: budget, amount_usd: "5", period: day, aggregation: per_key}
- name: no-budget
  definition:
    target: {kind: workspace}
    rules:
      - match: {kind: all_requests}
        action: {kind: models, names: [openai/gpt-4o-mini]}
`

func newBudgetsEnv(t *testing.T) *budgetsEnv {
	e := &budgetsEnv{resEnv: newResEnv(t)}
	ctx := context.Background()
	e.key = decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "create", "--name", "ci", "-o", "json"))
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte(budgetPolicies), 0o600); err != nil {
		t.Fatal(err)
	}
	e.ok("policies", "apply", "-f", file)
	for _, p := range decodeJSONOut[[]wire.Policy](t, e.ok("policies", "list", "-o", "json")) {
		switch p.Name {
		case "roomy":
			e.roomy = p.ID
		case "tight":
			e.tight = p.ID
		case "per-key":
			e.perKeyID = p.ID
		}
	}
	// A data plane's leases, as server/dataplane asks for them: tight has
	// spent 9.99 and holds 0.005 more; the key has spent 1 of its 5 today.
	org, ws := e.boot.Organization.ID, e.boot.Workspace.ID
	now := time.Now()
	ask := func(policy uuid.UUID, period spend.Period, agg string, key *uuid.UUID, used, want int64) wire.BudgetLeaseAsk {
		c := spend.Counter{PolicyID: policy, Period: period, Aggregation: agg}
		if key != nil {
			c.KeyID = *key
		}
		start, _ := spend.Bounds(period, now)
		return wire.BudgetLeaseAsk{Counter: c.String(), PeriodStart: start, UsedNanoUSD: used, WantNanoUSD: want}
	}
	if _, err := (&budgets.Leases{Store: e.st}).Lease(ctx, "dp-1", []wire.BudgetLeaseAsk{
		ask(e.tight, spend.Month, "shared", nil, 9_990_000_000, 5_000_000),
		ask(e.perKeyID, spend.Day, "per_key", &e.key.ID, 1e9, 0),
	}); err != nil {
		t.Fatal(err)
	}
	// Recorded after the counters began, so their spend stays the
	// data plane's: the usage only sets the forecasts' rate. An hour ago,
	// or the day's start if that is later: within the day and the month
	// the counters count (in a run's first hour of a month, an hour ago
	// was last month's, and roomy, whose spend is the month's usage,
	// showed none).
	occurred := now.Add(-time.Hour)
	if day, _ := spend.Bounds(spend.Day, now); occurred.Before(day) {
		occurred = day
	}
	at := occurred.UTC().Format(time.RFC3339)
	event := func(key *uuid.UUID, cost string) map[string]any {
		ev := map[string]any{"id": uuid.NewString(), "org_id": org, "workspace_id": ws, "owner_id": e.boot.User.ID,
			"model": "openai/gpt-4o-mini", "provider": "openai", "input_tokens": 10, "output_tokens": 1,
			"cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": cost, "status": "ok", "latency_ms": 5, "occurred_at": at}
		if key != nil {
			ev["inference_key_id"] = key
		}
		return ev
	}
	body, _ := json.Marshal(map[string]any{"events": []any{event(&e.key.ID, "700"), event(nil, "70")}})
	e.postAsOwner(t, "/api/v1/data-plane/usage-events", body)
	return e
}

// wantRunsOutSoon checks a forecast of a budget whose rest lasts minutes
// at the rate: it runs out within them, unless the period ends first
// (a test run in the last minutes of a day or month).
func wantRunsOutSoon(t *testing.T, name string, b budgetstate.Row, within time.Duration) {
	t.Helper()
	now := time.Now()
	if time.Until(b.PeriodEnd) < within {
		if b.Forecast.Outcome != tui.OutcomeLastsPeriod && b.Forecast.Outcome != tui.OutcomeRunsOut {
			t.Errorf("%s: %+v", name, b.Forecast)
		}
		return
	}
	at := b.Forecast.RunsOutAt
	if b.Forecast.Outcome != tui.OutcomeRunsOut || at == nil || at.Before(now.Add(-2*time.Minute)) || at.After(now.Add(within)) {
		t.Errorf("%s: forecast %+v, want a run-out within %s", name, b.Forecast, within)
	}
}

// TestBudgetsRun: gw budgets lists each budget's state with the key's name
// for per_key rows and a forecast at the last 7 days' rate; json and yaml
// are the API's states with a forecast member.
func TestBudgetsRun(t *testing.T) {
	e := newResEnv(t)
	r := e.code(ExitOK, "", "budgets")
	if r.out != "" || !strings.Contains(r.errOut, "no budgets in workspace default") {
		t.Fatalf("no budgets: %+v", r)
	}

	be := newBudgetsEnv(t)
	rows := tableRows(be.ok("budgets"))
	byPolicy := map[string][]string{}
	for _, r := range rows {
		byPolicy[r[0]] = r
	}
	if len(rows) != 3 {
		t.Fatalf("rows %q", rows)
	}
	keyName := "ci"
	// Piped, every column: policy key period aggregation amount spent
	// reserved remaining resets forecast; money with two decimals at least.
	want := map[string][]string{
		// No request touched roomy's counter: its spend is the month's usage.
		"roomy":   {"roomy", "(shared)", "month", "shared", "1000000.00", "770.00", "0.00", "999230.00"},
		"tight":   {"tight", "(shared)", "month", "shared", "10.00", "9.99", "0.005", "0.005"},
		"per-key": {"per-key", keyName, "day", "per_key", "5.00", "1.00", "0.00", "4.00"},
	}
	for name, w := range want {
		got := byPolicy[name]
		if len(got) != 10 || strings.Join(got[:8], "|") != strings.Join(w, "|") {
			t.Errorf("%s: %q, want %q…", name, got, w)
			continue
		}
		if !strings.HasSuffix(got[8], ":00") || len(got[8]) != len("2026-12-01 00:00") {
			t.Errorf("%s resets at %q", name, got[8])
		}
	}
	if f := byPolicy["roomy"][9]; f != "lasts the period" {
		t.Errorf("roomy forecast %q", f)
	}

	out := decodeJSONOut[[]budgetstate.Row](t, be.ok("budgets", "-o", "json"))
	states := map[string]budgetstate.Row{}
	for _, b := range out {
		states[b.PolicyName] = b
	}
	if b := states["roomy"]; b.Forecast.Outcome != tui.OutcomeLastsPeriod || b.Forecast.RunsOutAt != nil ||
		b.Forecast.RateUSDPerDay == nil || b.Counter != b.PolicyID.String()+"/month/shared" {
		t.Errorf("roomy: %+v", b)
	}
	// tight has 0.01 left at ≥ 110 USD a day (770 over at most 7 days):
	// out within 8 seconds, cut to the minute.
	wantRunsOutSoon(t, "tight", states["tight"], time.Minute)
	// The key has 4 left at ≥ 100 USD a day (its 700): within 58 minutes.
	wantRunsOutSoon(t, "per-key", states["per-key"], time.Hour)
	if k := states["per-key"].InferenceKeyID; k == nil || *k != be.key.ID {
		t.Errorf("per-key row's key %v", k)
	}
	for _, b := range out {
		want := (tui.Forecast{Outcome: b.Forecast.Outcome, At: derefTime(b.Forecast.RunsOutAt)}).String()
		if b.Forecast.RunsOutAt != nil {
			want = "runs out " + b.Forecast.RunsOutAt.UTC().Format("Jan 2 15:04")
		}
		if row := byPolicy[b.PolicyName]; row[9] != want {
			t.Errorf("%s: table says %q, json %+v", b.PolicyName, row[9], b.Forecast)
		}
	}
	raw := genericJSON(t, be.ok("budgets", "-o", "json")).([]any)[0].(map[string]any)
	for _, member := range []string{"policy_id", "amount_usd", "remaining_usd", "period_end", "forecast"} {
		if _, ok := raw[member]; !ok {
			t.Errorf("json lacks %s: %v", member, raw)
		}
	}
	mustContain(t, "yaml", be.ok("budgets", "-o", "yaml"), "policy_name: tight", "forecast:\n", "outcome: ")
	// A header on request, as the other lists; the wide columns with -o
	// wide (the widths are TestTablesFitTheTerminal's).
	table := be.ok("budgets", "-o", "table")
	mustContain(t, "-o table", table, "POLICY", "KEY", "SPENT", "FORECAST (UTC)")
	if strings.Contains(table, "RESETS") || strings.Contains(table, "RESERVED") || strings.Contains(table, "REMAINING") {
		t.Errorf("-o table shows the wide columns:\n%s", table)
	}
	mustContain(t, "-o wide", be.ok("budgets", "-o", "wide"), "AGGREGATION", "RESERVED", "REMAINING", "RESETS (UTC)", "FORECAST (UTC)")
}

// TestBudgetsWithoutUsageRead: a key that may read policies but not usage
// still sees the budgets; the forecast is "?" and stderr says why.
func TestBudgetsWithoutUsageRead(t *testing.T) {
	e := newBudgetsEnv(t)
	k := decodeJSONOut[wire.ManagementKey](t, e.ok("keys", "create", "--scope", "workspace", "--permissions",
		"policies.read,workspaces.read,inference-keys.read", "--label", "policies-only", "-o", "json"))
	t.Setenv("GW_TOKEN", k.Token)
	r := e.code(ExitOK, "", "budgets")
	mustContain(t, "stderr", r.errOut, "no forecast: this key may not read the workspace's usage (usage.read)")
	for _, row := range tableRows(r.out) {
		if row[9] != "?" {
			t.Errorf("forecast without usage: %q", row)
		}
	}
}

// TestPoliciesGetBudgets: gw policies get shows the state of a policy's
// budgets in a budgets section, only for a policy with budget rules, and
// leaves -o json the API's policy.
func TestPoliciesGetBudgets(t *testing.T) {
	e := newBudgetsEnv(t)
	out := e.ok("policies", "get", "per-key")
	mustContain(t, "get per-key", out, "budgets:\n  KEY  PERIOD  ", "REMAINING", "\n  ci   day ", "5.00", "4.00")
	if strings.Contains(out, "roomy") || strings.Contains(out, "tight") {
		t.Errorf("another policy's budgets:\n%s", out)
	}
	mustContain(t, "get roomy", e.ok("policies", "get", "roomy"), "budgets:\n", "lasts the period")
	if out := e.ok("policies", "get", "no-budget"); strings.Contains(out, "budgets:") {
		t.Errorf("budgets section without budget rules:\n%s", out)
	}
	raw := genericJSON(t, e.ok("policies", "get", "tight", "-o", "json")).(map[string]any)
	if _, ok := raw["budgets"]; ok {
		t.Errorf("-o json gained budgets: %v", raw)
	}
	if out := e.ok("policies", "get", "tight", "-o", "yaml"); strings.Contains(out, "spent") {
		t.Errorf("-o yaml gained the state:\n%s", out)
	}
}

// TestUsageDashboardBudgets: gw usage shows the context workspace's
// budgets, read from the real server.
func TestUsageDashboardBudgets(t *testing.T) {
	e := newBudgetsEnv(t)
	c, err := client.New(client.Options{Server: e.url, Token: e.boot.ManagementKey.Token})
	if err != nil {
		t.Fatal(err)
	}
	to, err := usage.TUIOptions(context.Background(), c, e.boot.Organization.ID.String(), e.boot.Workspace.Slug,
		&usage.DashboardOptions{Period: "30d"})
	if err != nil || to.BudgetWorkspaceID != e.boot.Workspace.ID.String() || to.Workspace != e.boot.Workspace.Name {
		t.Fatalf("budget workspace %q: %v", to.BudgetWorkspaceID, err)
	}
	m := tui.New(to)
	m.Update(tea.WindowSizeMsg{Width: 140, Height: 50})
	var drive func(tea.Cmd)
	drive = func(cmd tea.Cmd) {
		if cmd == nil {
			return
		}
		msg := cmd()
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				drive(c)
			}
			return
		}
		if msg != nil {
			_, next := m.Update(msg)
			drive(next)
		}
	}
	drive(m.Init())
	view := ansi.Strip(m.View())
	mustContain(t, "dashboard", view, "Budgets · "+e.boot.Workspace.Name, "roomy", "$770.00 / $1,000,000.00", "lasts the period",
		"tight", "$9.99 / $10.00", "per-key · ci ("+e.key.Prefix+"…)")
}

// TestBudgetsWarnsAboutAStoredAmount (issue 26 row 1): a budget an older
// version stored finer than a nano-dollar lists with the amount enforced,
// and stderr says what was stored and how to fix it.
func TestBudgetsWarnsAboutAStoredAmount(t *testing.T) {
	e := newResEnv(t)
	now := store.Now()
	def := `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"1.234567890123","period":"day","aggregation":"shared"}}]}`
	if err := e.st.CreatePolicy(context.Background(), &store.Policy{ID: uuid.New(), OrgID: e.boot.Organization.ID, WorkspaceID: e.boot.Workspace.ID,
		Name: "old", Enabled: true, Definition: def, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	r := e.code(ExitOK, "", "budgets")
	mustContain(t, "stderr", r.errOut, `warning: policy "old": the stored amount 1.234567890123 is finer than a nano-dollar`, "Save the policy again")
	if rows := tableRows(r.out); len(rows) != 1 || rows[0][4] != "1.23456789" {
		t.Errorf("rows %q", rows)
	}
}

// TestBudgetsCreateForTagRefusesWhatCannotBeCounted (issue 26 row 1): an
// amount finer than a nano-dollar is refused, naming the field and why;
// nothing is stored, and gw budgets keeps answering.
func TestBudgetsCreateForTagRefusesWhatCannotBeCounted(t *testing.T) {
	e := newResEnv(t)
	for _, amount := range []string{"1.234567890123", "9223372037"} {
		r := e.gw("", "budgets", "create-for-tag", "team=x", "--amount", amount, "--period", "month")
		if r.code == ExitOK || !strings.Contains(r.errOut, "--amount") ||
			!(strings.Contains(r.errOut, "no more than 9 decimal places") || strings.Contains(r.errOut, "less than or equal to 1000000000")) {
			t.Fatalf("--amount %s: %d %s %s", amount, r.code, r.out, r.errOut)
		}
	}
	r := e.code(ExitOK, "", "budgets")
	mustContain(t, "gw budgets", r.errOut, "no budgets in workspace default")
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
