package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/wire"
)

// totalsView shows the period's counters next to the previous period's, one
// box per counter.
type totalsView struct {
	ctx           *ProgramContext
	report        *wire.UsageReport
	width, height int
}

var _ component = (*totalsView)(nil)

func newTotalsView(ctx *ProgramContext) *totalsView { return &totalsView{ctx: ctx} }

func (t *totalsView) Init() tea.Cmd                       { return nil }
func (t *totalsView) Update(tea.Msg) (tea.Model, tea.Cmd) { return t, nil }
func (t *totalsView) ShortHelp() []key.Binding            { return nil }
func (t *totalsView) FullHelp() [][]key.Binding           { return nil }
func (t *totalsView) SetSize(width, height int)           { t.width, t.height = width, height }
func (t *totalsView) SetReport(r *wire.UsageReport)       { t.report = r }

// boxHeight is the boxes' height: a border line, label, value, change,
// previous value, border line.
const boxHeight = 6

// compactHeight is the table form's: a header and three rows.
const compactHeight = 4

// boxed reports whether each counter gets a box: when six fit side by side
// and the screen still has lines to spare for the chart and the table.
// Otherwise a four-line table says the same in less room.
func (t *totalsView) boxed() bool { return t.width >= 96 && t.height >= 30 }

// Height is how many lines the totals take at the current size.
func (t *totalsView) Height() int {
	if t.boxed() {
		return boxHeight
	}
	return compactHeight
}

type totalCell struct {
	label, value, previous string
	cur, prev              decimal.Decimal
}

func (t *totalsView) cells() []totalCell {
	tot, cmp := t.report.Totals, t.report.Comparison
	count := func(label string, cur, prev int64) totalCell {
		return totalCell{label: label, value: formatInt(cur), previous: formatInt(prev), cur: decimal.NewFromInt(cur), prev: decimal.NewFromInt(prev)}
	}
	cost, prevCost := parseCost(tot.CostUSD), parseCost(cmp.CostUSD)
	return []totalCell{
		count("Requests", tot.Requests, cmp.Requests),
		count("Input tokens", tot.InputTokens, cmp.InputTokens),
		count("Output tokens", tot.OutputTokens, cmp.OutputTokens),
		count("Cache read", tot.CacheReadTokens, cmp.CacheReadTokens),
		count("Cache write", tot.CacheWriteTokens, cmp.CacheWriteTokens),
		{label: "Cost", value: formatCost(cost), previous: formatCost(prevCost), cur: cost, prev: prevCost},
	}
}

func (t *totalsView) View() string {
	if t.report == nil || t.width <= 0 {
		return ""
	}
	if t.boxed() {
		return t.boxes()
	}
	return t.compact()
}

// trendText is a change with its arrow, coloured by direction.
func (t *totalsView) trendText(c totalCell) string {
	st := t.ctx.Styles
	pct, tr := change(c.cur, c.prev)
	switch tr {
	case trendUp:
		return st.Up.Render("▲ " + pct)
	case trendDown:
		return st.Down.Render("▼ " + pct)
	case trendNew:
		return st.Up.Render("▲ new")
	case trendFlat:
		return st.Faint.Render("= " + pct)
	}
	return st.Faint.Render(pct)
}

func (t *totalsView) boxes() string {
	st := t.ctx.Styles
	cells := t.cells()
	boxes := make([]string, len(cells))
	for i, c := range cells {
		// Spread the width over the boxes; the last takes what the
		// division leaves, so the row spans the screen exactly.
		outer := t.width / len(cells)
		if i == len(cells)-1 {
			outer = t.width - outer*(len(cells)-1)
		}
		inner := max(outer-4, 1) // border and padding on both sides
		lines := []string{
			st.Faint.Render(c.label),
			st.Bold.Render(c.value),
			t.trendText(c),
			st.Faint.Render("prev " + c.previous),
		}
		for j, l := range lines {
			lines[j] = ansi.Truncate(l, inner, "…")
		}
		boxes[i] = st.Box.Width(outer - 2).Render(strings.Join(lines, "\n"))
	}
	return lipgloss.JoinHorizontal(lipgloss.Top, boxes...)
}

// compact is the totals as a small table: this period, the previous one,
// the change, one column per counter, counts in compact form.
func (t *totalsView) compact() string {
	st := t.ctx.Styles
	const labelWidth = 8 // "previous"
	cells := t.cells()
	colWidth := min(max((t.width-labelWidth)/len(cells), 4), 14)
	names := []string{"Requests", "Input", "Output", "Cache rd", "Cache wr", "Cost"}
	if colWidth-1 < 8 {
		names = []string{"Reqs", "In", "Out", "C.read", "C.write", "Cost"}
	}
	// Right-aligned, with at least one space before each value.
	cell := func(s string) string {
		s = ansi.Truncate(s, colWidth-1, "…")
		return strings.Repeat(" ", colWidth-lipgloss.Width(s)) + s
	}
	label := func(s string) string { return st.Faint.Render(fmt.Sprintf("%-*s", labelWidth, s)) }
	header, cur, prev, chg := label(""), label("period"), label("previous"), label("change")
	for i, c := range cells {
		value, previous := c.value, c.previous
		if i < 5 { // the counts; cost keeps its cents
			value, previous = formatCompact(c.cur.IntPart()), formatCompact(c.prev.IntPart())
		}
		header += st.Faint.Render(cell(names[i]))
		cur += st.Bold.Render(cell(value))
		prev += st.Faint.Render(cell(previous))
		pct, tr := change(c.cur, c.prev)
		style := st.Faint
		switch tr {
		case trendUp, trendNew:
			style = st.Up
		case trendDown:
			style = st.Down
		}
		chg += style.Render(cell(pct))
	}
	lines := []string{header, cur, prev, chg}
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, t.width, "")
	}
	return strings.Join(lines, "\n")
}
