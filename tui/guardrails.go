package tui

import (
	"context"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// GuardrailSource is what a Source may also offer: what each guardrail
// did over the report's period (issue 32). Without it the dashboard has
// no guardrails panel.
type GuardrailSource interface {
	Guardrails(ctx context.Context, q client.UsageQuery) (wire.GuardrailReport, error)
}

var _ GuardrailSource = ClientSource{}

// Guardrails reads the guardrail report of the source's scope.
func (s ClientSource) Guardrails(ctx context.Context, q client.UsageQuery) (wire.GuardrailReport, error) {
	return s.Client.GuardrailReport(ctx, s.scope(), q)
}

// guardrailsLoadedMsg is a guardrail report, or why it could not be read.
type guardrailsLoadedMsg struct {
	seq    int
	report wire.GuardrailReport
	err    error
}

func loadGuardrailsCmd(gs GuardrailSource, seq int, q client.UsageQuery) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
		defer cancel()
		r, err := gs.Guardrails(ctx, q)
		return guardrailsLoadedMsg{seq: seq, report: r, err: err}
	}
}

// guardrailsView is the guardrails panel: the period's blocks and
// redactions, and a line per guardrail and stage that did something
// (most blocks first); nothing while no guardrail applied to a request.
// gw usage guardrails lists every row.
type guardrailsView struct {
	ctx   *ProgramContext
	msg   *guardrailsLoadedMsg
	width int
}

const maxGuardrailLines = 3

var _ component = (*guardrailsView)(nil)

func newGuardrailsView(ctx *ProgramContext) *guardrailsView { return &guardrailsView{ctx: ctx} }

func (g *guardrailsView) Init() tea.Cmd                       { return nil }
func (g *guardrailsView) Update(tea.Msg) (tea.Model, tea.Cmd) { return g, nil }
func (g *guardrailsView) ShortHelp() []key.Binding            { return nil }
func (g *guardrailsView) FullHelp() [][]key.Binding           { return nil }
func (g *guardrailsView) SetSize(width, _ int)                { g.width = width }

// SetData takes a load's answer. A failed refresh keeps the rows on
// screen, as the other parts do; with none, the panel says it failed.
func (g *guardrailsView) SetData(msg guardrailsLoadedMsg) {
	if msg.err != nil && g.msg != nil && g.msg.err == nil && len(g.msg.report.Rows) > 0 {
		return
	}
	g.msg = &msg
}

func (g *guardrailsView) lines() []string {
	m := g.msg
	if m == nil {
		return nil
	}
	st := g.ctx.Styles
	if m.err != nil {
		// The report itself says when the key may not read usage; a
		// server without the report (an older one) shows nothing.
		if client.IsStatus(m.err, 404) || client.IsStatus(m.err, 403) {
			return nil
		}
		return []string{st.Section.Render("Guardrails") + "  " + st.Error.Render("⚠ "+shortErr(m.err))}
	}
	if len(m.report.Rows) == 0 {
		return nil
	}
	var total wire.GuardrailReportRow
	for _, r := range m.report.Rows {
		total.Blocked += r.Blocked
		total.Redacted += r.Redacted
		total.Flagged += r.Flagged
		total.Errored += r.Errored
		total.Skipped += r.Skipped
	}
	title := st.Section.Render("Guardrails") + st.Faint.Render(" · ") + outcomeCounts(total, st.Faint.Render(" · "))
	out := []string{ansi.Truncate(title, g.width, "…")}
	shown := m.report.Rows
	if len(shown) > maxGuardrailLines {
		shown = shown[:maxGuardrailLines]
	}
	nameWidth := 0
	names := make([]string, len(shown))
	for i, r := range shown {
		names[i] = r.Name
		if r.Deleted {
			names[i] += " (deleted)"
		}
		nameWidth = max(nameWidth, min(ansi.StringWidth(names[i]), 32))
	}
	for i, r := range shown {
		line := fmt.Sprintf("  %-*s  %-6s  %s", nameWidth, ansi.Truncate(names[i], nameWidth, "…"), r.Stage,
			outcomeCounts(r, " · ")+st.Faint.Render(fmt.Sprintf(" of %s", formatCompact(r.Requests))))
		out = append(out, ansi.Truncate(line, g.width, "…"))
	}
	if more := len(m.report.Rows) - len(shown); more > 0 {
		out = append(out, st.Faint.Render(fmt.Sprintf("  … %d more: gw usage guardrails lists them all", more)))
	}
	return out
}

// outcomeCounts names the outcomes that count something, blocks and
// redactions always.
func outcomeCounts(r wire.GuardrailReportRow, sep string) string {
	parts := []string{formatCompact(r.Blocked) + " blocked", formatCompact(r.Redacted) + " redacted"}
	for _, o := range []struct {
		n    int64
		name string
	}{{r.Flagged, "flagged"}, {r.Errored, "errored"}, {r.Skipped, "skipped"}} {
		if o.n > 0 {
			parts = append(parts, formatCompact(o.n)+" "+o.name)
		}
	}
	return strings.Join(parts, sep)
}

// Height is how many lines the panel takes.
func (g *guardrailsView) Height() int { return len(g.lines()) }

func (g *guardrailsView) View() string {
	if g.width <= 0 {
		return ""
	}
	return strings.Join(g.lines(), "\n")
}

// loadGuardrails reloads the panel with the dashboard's query.
func (m *Model) loadGuardrails() tea.Cmd {
	gs, ok := m.source.(GuardrailSource)
	if !ok {
		return nil
	}
	m.guardrailsSeq = m.next()
	return loadGuardrailsCmd(gs, m.guardrailsSeq, m.query())
}
