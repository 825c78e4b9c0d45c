package tui

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// BudgetSource is what a Source may also offer: a workspace's budgets in
// their current periods. Without it the dashboard has no budgets panel.
type BudgetSource interface {
	Budgets(ctx context.Context, workspace string) ([]wire.BudgetState, error)
}

var _ BudgetSource = ClientSource{}

// Budgets reads the workspace's budget states.
func (s ClientSource) Budgets(ctx context.Context, workspace string) ([]wire.BudgetState, error) {
	return s.Client.ListBudgets(ctx, s.Org, workspace)
}

// ReadRecentSpend reads what forecasts extrapolate, for the workspace
// with id workspaceID: its usage report of period ForecastWindow and, when
// perKey, the same period by inference key. The usage report has no
// inference key filter; one breakdown gives every key's spend at once.
// Days are cut in UTC, the zone budget periods are counted in.
func ReadRecentSpend(ctx context.Context, src Source, workspaceID string, perKey bool) (RecentSpend, error) {
	if workspaceID == "" {
		// An empty filter would read the whole organization's spend.
		return RecentSpend{}, fmt.Errorf("no workspace id to read its spend")
	}
	q := client.UsageQuery{Period: ForecastWindow, Timezone: "UTC", WorkspaceID: workspaceID}
	r, err := src.Report(ctx, q)
	if err != nil {
		return RecentSpend{}, err
	}
	var byKey *wire.UsageBreakdown
	if perKey {
		b, err := src.Breakdown(ctx, "inference_key", q)
		if err != nil {
			return RecentSpend{}, err
		}
		byKey = &b
	}
	return RecentSpendOf(r, byKey), nil
}

// HasPerKey reports whether any budget is counted per inference key.
func HasPerKey(states []wire.BudgetState) bool {
	return slices.ContainsFunc(states, func(b wire.BudgetState) bool { return b.Aggregation == "per_key" })
}

// budgetsLoadedMsg is a workspace's budgets with the recent spend their
// forecasts need, read at at. spendErr is kept apart from err: budgets
// without a forecast are still worth showing.
type budgetsLoadedMsg struct {
	seq       int
	workspace string
	states    []wire.BudgetState
	spend     *RecentSpend
	spendErr  error
	err       error
	at        time.Time
}

func loadBudgetsCmd(src Source, bs BudgetSource, seq int, workspace string, now func() time.Time) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
		defer cancel()
		msg := budgetsLoadedMsg{seq: seq, workspace: workspace}
		msg.states, msg.err = bs.Budgets(ctx, workspace)
		if msg.err != nil || len(msg.states) == 0 {
			return msg
		}
		spend, err := ReadRecentSpend(ctx, src, workspace, HasPerKey(msg.states))
		if err != nil {
			msg.spendErr = err
		} else {
			msg.spend = &spend
		}
		msg.at = now()
		return msg
	}
}

// budgetsView is the budgets panel: a line per budget with spent against
// amount, a gauge and the run-out forecast. It shows at most
// maxBudgetLines budgets; gw budgets lists them all.
type budgetsView struct {
	ctx       *ProgramContext
	workspace string
	msg       *budgetsLoadedMsg
	width     int
}

const maxBudgetLines = 4

var _ component = (*budgetsView)(nil)

func newBudgetsView(ctx *ProgramContext) *budgetsView { return &budgetsView{ctx: ctx} }

func (b *budgetsView) Init() tea.Cmd                       { return nil }
func (b *budgetsView) Update(tea.Msg) (tea.Model, tea.Cmd) { return b, nil }
func (b *budgetsView) ShortHelp() []key.Binding            { return nil }
func (b *budgetsView) FullHelp() [][]key.Binding           { return nil }
func (b *budgetsView) SetSize(width, _ int)                { b.width = width }

// SetWorkspace says whose budgets are wanted. Another workspace's budgets
// on screen are dropped rather than shown under the new name.
func (b *budgetsView) SetWorkspace(ws string) {
	if ws != b.workspace {
		b.workspace, b.msg = ws, nil
	}
}

// SetData takes a load's answer, if it is about the wanted workspace.
func (b *budgetsView) SetData(msg budgetsLoadedMsg) {
	if msg.workspace == b.workspace {
		b.msg = &msg
	}
}

// lines is the panel's content; none while there is nothing to say (no
// workspace, nothing loaded yet, a workspace without budgets).
func (b *budgetsView) lines() []string {
	m := b.msg
	if m == nil || b.workspace == "" {
		return nil
	}
	st := b.ctx.Styles
	title := st.Section.Render("Budgets") + st.Faint.Render(" · "+b.ctx.Label(b.workspace))
	switch {
	case client.IsStatus(m.err, http.StatusForbidden):
		// A key without policies.read: say so once, quietly.
		return []string{title + st.Faint.Render(" · not readable with this key (policies.read)")}
	case m.err != nil:
		return []string{title + "  " + st.Error.Render("⚠ "+shortErr(m.err))}
	case len(m.states) == 0:
		return nil
	}
	if m.spendErr != nil {
		title += st.Faint.Render(" · no forecast: " + shortErr(m.spendErr))
	} else {
		title += st.Faint.Render(" · forecast at the last 7 days' rate")
	}
	out := []string{title}
	shown := m.states
	if len(shown) > maxBudgetLines {
		shown = shown[:maxBudgetLines-1]
	}
	names := make([]string, len(shown))
	nameWidth := 0
	for i, s := range shown {
		names[i] = s.PolicyName
		if s.InferenceKeyID != nil {
			names[i] += " · " + b.ctx.Label(s.InferenceKeyID.String())
		} else if s.Aggregation == "per_key" {
			names[i] += " · each key"
		}
		nameWidth = max(nameWidth, min(ansi.StringWidth(names[i]), 40))
	}
	for i, s := range shown {
		amount, spent := parseCost(s.AmountUSD), parseCost(s.SpentUSD)
		money := formatCost(spent) + " / " + formatCost(amount)
		f := ForecastBudget(s, m.spend, m.at)
		fc := f.String()
		style := st.Faint
		switch f.Outcome {
		case OutcomeRunsOut:
			style = st.Notice
		case OutcomeExhausted:
			style = st.Error
		}
		name := ansi.Truncate(names[i], nameWidth, "…")
		line := fmt.Sprintf("  %-*s  %-5s  %19s  %s %4s  ", nameWidth, name, s.Period, money,
			st.Bar.Render(gauge(spent, amount, 10)), share(spent, amount)) + style.Render(fc)
		out = append(out, ansi.Truncate(line, b.width, "…"))
	}
	if more := len(m.states) - len(shown); more > 0 {
		out = append(out, st.Faint.Render(fmt.Sprintf("  … %d more: gw budgets lists them all", more)))
	}
	return out
}

// Height is how many lines the panel takes.
func (b *budgetsView) Height() int { return len(b.lines()) }

func (b *budgetsView) View() string {
	if b.width <= 0 {
		return ""
	}
	return strings.Join(b.lines(), "\n")
}

// gauge is spent against amount in width cells, full when spent reaches it.
func gauge(spent, amount decimal.Decimal, width int) string {
	filled := width
	if amount.IsPositive() && spent.LessThan(amount) {
		filled = int(spent.Mul(decimal.NewFromInt(int64(width))).Div(amount).IntPart())
	}
	filled = max(filled, 0)
	return strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
}

// share is spent as a whole percentage of amount.
func share(spent, amount decimal.Decimal) string {
	if !amount.IsPositive() {
		return "—"
	}
	return spent.Mul(decimal.NewFromInt(100)).Div(amount).Floor().String() + "%"
}

// loadBudgets reloads the budgets panel: the filtered workspace's budgets,
// else those of the workspace the dashboard was opened for.
func (m *Model) loadBudgets() tea.Cmd {
	ws := m.filters.WorkspaceID
	if ws == "" {
		ws = m.budgetWorkspace
	}
	m.budgets.SetWorkspace(ws)
	m.layout()
	bs, ok := m.source.(BudgetSource)
	if !ok || ws == "" {
		return nil
	}
	m.budgetsSeq = m.next()
	return loadBudgetsCmd(m.source, bs, m.budgetsSeq, ws, m.now)
}
