package tui

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/google/uuid"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// budgetSource is a fakeSource that also has budgets, by workspace.
type budgetSource struct {
	*fakeSource
	budgets map[string][]wire.BudgetState
	err     error
	asked   []string
}

func (b *budgetSource) Budgets(_ context.Context, ws string) ([]wire.BudgetState, error) {
	b.asked = append(b.asked, ws)
	return b.budgets[ws], b.err
}

var (
	keyA      = uuid.MustParse("9d0c0000-0000-4000-8000-00000000000a")
	budgetNow = day0.AddDate(0, 0, 7) // the end of canned's 7d report
)

func budgetRow(name, period, agg string, key *uuid.UUID, amount, spent string) wire.BudgetState {
	start := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 1, 0)
	if period == "day" {
		start = budgetNow
		end = start.AddDate(0, 0, 1)
	}
	return wire.BudgetState{PolicyID: uuid.New(), PolicyName: name, Period: period, Aggregation: agg, InferenceKeyID: key,
		AmountUSD: amount, SpentUSD: spent, ReservedUSD: "0", RemainingUSD: "0", PeriodStart: start, PeriodEnd: end}
}

func startBudgets(t *testing.T, opts Options, budgets map[string][]wire.BudgetState) (*dashboard, *budgetSource) {
	fake := newFake()
	fake.labels[keyA.String()] = "ci (sk-gw-ab…)"
	src := &budgetSource{fakeSource: fake, budgets: budgets}
	opts.Now = func() time.Time { return budgetNow }
	opts.Refresh = 0
	return start(t, labeledBudgetSource{src}, fake, opts), src
}

// labeledBudgetSource names ids too, as ClientSource does.
type labeledBudgetSource struct{ *budgetSource }

func (l labeledBudgetSource) Labels(context.Context) (map[string]string, error) { return l.labels, nil }

// TestBudgetsPanel: the panel shows each budget's spend against its amount
// and the forecast at the rate of the workspace's (or the key's) last 7
// days, read with a 7d report filtered to the workspace and, for per_key
// budgets, a breakdown by inference key.
func TestBudgetsPanel(t *testing.T) {
	d, src := startBudgets(t, Options{BudgetWorkspaceID: wsProd}, map[string][]wire.BudgetState{wsProd: {
		budgetRow("monthly-cap", "month", "shared", nil, "500", "200"),
		budgetRow("per-key-daily", "day", "per_key", &keyA, "20", "19"),
		budgetRow("roomy", "month", "shared", nil, "100000", "10"),
	}})
	if len(src.asked) != 1 || src.asked[0] != wsProd {
		t.Fatalf("budgets asked for %v", src.asked)
	}
	var spendQ *client.UsageQuery
	for _, c := range d.src.calls {
		if c.kind == "report" && c.q.Period == "7d" {
			spendQ = &c.q
		}
	}
	if spendQ == nil || spendQ.WorkspaceID != wsProd || spendQ.Timezone != "UTC" {
		t.Fatalf("no 7d report of the workspace in UTC: %+v", d.src.calls)
	}
	if k := d.src.lastCall(t, "breakdown:inference_key"); k.Period != "7d" || k.WorkspaceID != wsProd {
		t.Fatalf("key spend query %+v", k)
	}
	d.mustShow("Budgets · Production · forecast at the last 7 days' rate",
		"monthly-cap", "$200.00 / $500.00", "████░░░░░░  40%", "runs out on 2026-05-24 17:35 UTC",
		"per-key-daily · ci (sk-gw-ab…)", "$19.00 / $20.00", "runs out on 2026-05-08 01:20 UTC",
		"roomy", "lasts the period")
	// The panel sits between the totals and the chart.
	v := d.view()
	if strings.Index(v, "Budgets") > strings.Index(v, "By model") || strings.Index(v, "Budgets") < strings.Index(v, "Cost") {
		t.Fatalf("panel out of place:\n%s", v)
	}
}

// TestBudgetsFollowTheWorkspaceFilter: with a workspace filter the panel
// shows that workspace's budgets; cleared, the dashboard's own again.
func TestBudgetsFollowTheWorkspaceFilter(t *testing.T) {
	d, src := startBudgets(t, Options{BudgetWorkspaceID: wsProd}, map[string][]wire.BudgetState{
		wsProd: {budgetRow("prod-cap", "month", "shared", nil, "500", "200")},
		wsDev:  {budgetRow("dev-cap", "month", "shared", nil, "1", "1")},
	})
	d.mustShow("prod-cap")
	d.key("w") // → the first workspace with usage: Production
	d.key("w") // → Development
	d.mustShow("Budgets · Development", "dev-cap", "$1.00 / $1.00", "██████████ 100%", "exhausted")
	d.mustNotShow("prod-cap")
	d.key("c")
	d.mustShow("Budgets · Production", "prod-cap")
	if got := strings.Join(src.asked, ","); got != wsProd+","+wsProd+","+wsDev+","+wsProd {
		t.Fatalf("budgets asked for %s", got)
	}
}

// TestBudgetsPanelStates: no workspace or no budgets, no panel; a key
// without policies.read says so quietly; other errors show; a spend that
// cannot be read leaves the budgets without a forecast; a late answer for
// a workspace left behind is dropped; many budgets are cut with a pointer
// to gw budgets.
func TestBudgetsPanelStates(t *testing.T) {
	t.Run("no workspace", func(t *testing.T) {
		d, src := startBudgets(t, Options{}, nil)
		d.mustNotShow("Budgets")
		if len(src.asked) != 0 {
			t.Fatalf("asked %v", src.asked)
		}
	})
	t.Run("no budgets", func(t *testing.T) {
		d, _ := startBudgets(t, Options{BudgetWorkspaceID: wsProd}, nil)
		d.mustNotShow("Budgets")
	})
	t.Run("source without budgets", func(t *testing.T) {
		d := startFake(t, Options{BudgetWorkspaceID: wsProd})
		d.mustNotShow("Budgets")
	})
	t.Run("forbidden", func(t *testing.T) {
		fake := newFake()
		src := &budgetSource{fakeSource: fake, err: &client.APIError{Status: http.StatusForbidden, Detail: "missing permission"}}
		d := start(t, src, fake, Options{BudgetWorkspaceID: wsProd})
		d.mustShow("Budgets · " + wsProd + " · not readable with this key (policies.read)")
		d.mustNotShow("⚠")
	})
	t.Run("error", func(t *testing.T) {
		fake := newFake()
		src := &budgetSource{fakeSource: fake, err: errors.New("boom")}
		d := start(t, src, fake, Options{BudgetWorkspaceID: wsProd})
		d.mustShow("Budgets · " + wsProd + "  ⚠ boom")
	})
	t.Run("spend unreadable", func(t *testing.T) {
		fake := newFake()
		src := &budgetSource{fakeSource: fake, budgets: map[string][]wire.BudgetState{wsProd: {budgetRow("cap", "month", "shared", nil, "5", "1")}}}
		d := start(t, src, fake, Options{BudgetWorkspaceID: wsProd})
		fake.fail = errors.New("usage.read missing")
		d.send(collect(d.m.loadBudgets())[0])
		d.mustShow("Budgets · "+wsProd+" · no forecast: usage.read missing", "$1.00 / $5.00", " ?")
	})
	t.Run("stale answer", func(t *testing.T) {
		d, _ := startBudgets(t, Options{BudgetWorkspaceID: wsProd}, map[string][]wire.BudgetState{wsProd: {budgetRow("cap", "month", "shared", nil, "5", "1")}})
		old := d.m.budgetsSeq
		d.key("r")
		d.send(budgetsLoadedMsg{seq: old, workspace: wsProd, states: []wire.BudgetState{budgetRow("ghost", "day", "shared", nil, "1", "0")}})
		d.mustShow("cap")
		d.mustNotShow("ghost")
	})
	t.Run("many", func(t *testing.T) {
		var rows []wire.BudgetState
		for _, n := range []string{"a-cap", "b-cap", "c-cap", "d-cap", "e-cap", "f-cap"} {
			rows = append(rows, budgetRow(n, "month", "shared", nil, "5", "0"))
		}
		d, _ := startBudgets(t, Options{BudgetWorkspaceID: wsProd}, map[string][]wire.BudgetState{wsProd: rows})
		d.mustShow("a-cap", "c-cap", "… 3 more: gw budgets lists them all")
		d.mustNotShow("d-cap")
	})
	t.Run("per key before any key", func(t *testing.T) {
		d, _ := startBudgets(t, Options{BudgetWorkspaceID: wsProd}, map[string][]wire.BudgetState{wsProd: {budgetRow("each", "day", "per_key", nil, "5", "0")}})
		d.mustShow("each · each key", "$0.00 / $5.00", "runs out on 2026-05-08 06:41 UTC")
	})
}

// TestBudgetsPanelFitsSmallScreens: the panel's lines are cut to the
// width and the chart gives up the lines the panel takes.
func TestBudgetsPanelFitsSmallScreens(t *testing.T) {
	d, _ := startBudgets(t, Options{BudgetWorkspaceID: wsProd}, map[string][]wire.BudgetState{wsProd: {
		budgetRow("a-very-long-policy-name-that-goes-on-and-on-and-on", "month", "shared", nil, "500", "200"),
	}})
	for _, size := range [][2]int{{60, 24}, {120, 40}} {
		d.send(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		lines := strings.Split(d.view(), "\n")
		if len(lines) > size[1] {
			t.Fatalf("%dx%d: %d lines", size[0], size[1], len(lines))
		}
		for _, l := range lines {
			if w := len([]rune(l)); w > size[0] {
				t.Fatalf("%dx%d: a line of %d: %q", size[0], size[1], w, l)
			}
		}
	}
}
