// Package tui is `gw usage`, the usage dashboard in the terminal
// (bubbletea v1). One root Model holds the query (period, filters,
// breakdown dimension) and a ProgramContext shared with its components:
// totals against the previous period, a daily chart, a breakdown table.
// Update and View are pure; every request runs in a tea.Cmd that answers
// with a typed message (reportLoadedMsg, breakdownLoadedMsg, errMsg,
// tickMsg, …), so tests drive the dashboard by sending messages.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// DefaultRefresh is how often the dashboard reloads on its own.
const DefaultRefresh = 30 * time.Second

// Options configure the dashboard.
type Options struct {
	Source Source
	// Org names the organization in the header.
	Org string
	// Period is today, 7d, 30d or month_to_date; empty means 30d.
	Period string
	// Timezone is the IANA zone days are cut in; empty leaves it to the
	// server (UTC).
	Timezone string
	// WorkspaceID starts the dashboard filtered to one workspace.
	WorkspaceID string
	// Workspace, when set, names the one workspace the Source reads (a
	// workspace's own report): the header says so and the workspace
	// filter is off, since there is nothing else to filter to.
	Workspace string
	// By is the breakdown's first dimension; empty means model.
	By string
	// TagKeys are the tag keys tab offers a breakdown by, after the
	// other dimensions; enter on a row of one filters by that tag.
	TagKeys []string
	// Tags start the dashboard filtered by these tags, KEY:VALUE each.
	Tags []string
	// Refresh is the auto refresh interval; 0 turns it off.
	Refresh time.Duration
	// Clock is the zone the "updated" time is shown in; nil means the
	// machine's own.
	Clock *time.Location
	// BudgetWorkspaceID is the workspace whose budgets the budgets panel
	// shows while no workspace filter is set (with one, the filtered
	// workspace's); empty: none then. The panel needs a Source that is
	// also a BudgetSource.
	BudgetWorkspaceID string
	// Now is the clock budget forecasts count from; nil means time.Now.
	Now func() time.Time
}

// state is the screen the root shows.
type state int

const (
	stateLoading state = iota // the first report is on its way; nothing to show yet
	stateReady                // a report is on screen; later errors show inline above the help
	stateFailed               // the first report failed: only the error and how to retry
)

// filters narrow the report; zero values are not sent.
type filters struct {
	WorkspaceID string
	ModelID     string
	ProviderID  string
	OwnerID     string
	// Tags are tag filters, KEY:VALUE joined by newlines (a string keeps
	// filters comparable); every one must match.
	Tags string
}

// tagList is the tag filters as a list.
func (f filters) tagList() []string {
	if f.Tags == "" {
		return nil
	}
	return strings.Split(f.Tags, "\n")
}

// withTag adds or replaces the filter on key.
func (f filters) withTag(key, value string) filters {
	var out []string
	for _, t := range f.tagList() {
		if !strings.HasPrefix(t, key+":") {
			out = append(out, t)
		}
	}
	f.Tags = strings.Join(append(out, key+":"+value), "\n")
	return f
}

func (f filters) empty() bool { return f == filters{} }

// Model is the dashboard's root model.
type Model struct {
	ctx    *ProgramContext
	source Source
	org    string
	state  state

	period   string
	timezone string
	filters  filters
	by       string
	refresh  time.Duration

	report     *wire.UsageReport
	workspaces []string
	// workspace names the one workspace the source reads, if it reads
	// only one.
	workspace string
	errs      map[loadKind]error // the failed loads, until one of the same kind succeeds
	clock     *time.Location
	notice    string

	// seq numbers the loads; the *Seq fields hold the newest of each kind,
	// the only one whose answer is still wanted.
	seq                                    int
	reportSeq, breakdownSeq, workspacesSeq int
	budgetsSeq                             int
	guardrailsSeq                          int
	budgetWorkspace                        string
	now                                    func() time.Time
	reportPending, breakdownPending        bool
	tickGen                                int

	totals    *totalsView
	chart     *chartView
	breakdown *breakdownView
	budgets   *budgetsView
	guards    *guardrailsView
	help      help.Model
}

var _ tea.Model = (*Model)(nil)

// New builds the dashboard; Init starts the first loads.
func New(opts Options) *Model {
	ctx := &ProgramContext{Styles: DefaultStyles(), Keys: DefaultKeyMap(), Labels: map[string]string{}}
	m := &Model{
		ctx:       ctx,
		source:    opts.Source,
		org:       opts.Org,
		period:    opts.Period,
		timezone:  opts.Timezone,
		filters:   filters{WorkspaceID: opts.WorkspaceID, Tags: strings.Join(opts.Tags, "\n")},
		workspace: opts.Workspace,
		by:        opts.By,
		refresh:   opts.Refresh,
		errs:      map[loadKind]error{},
		clock:     opts.Clock,
		help:      help.New(),

		budgetWorkspace: opts.BudgetWorkspaceID,
		now:             opts.Now,
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.clock == nil {
		m.clock = time.Local
	}
	if m.period == "" {
		m.period = "30d"
	}
	if m.by == "" {
		m.by = "model"
	}
	if m.workspace != "" {
		ctx.Keys.Workspace.SetEnabled(false)
	}
	m.totals = newTotalsView(ctx)
	m.chart = newChartView(ctx)
	m.breakdown = newBreakdownView(ctx, m.by, opts.TagKeys)
	m.budgets = newBudgetsView(ctx)
	m.guards = newGuardrailsView(ctx)
	return m
}

// Run shows the dashboard on a terminal until the user quits or ctx ends.
func Run(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	queryTerminal(out)
	p := tea.NewProgram(New(opts), tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen())
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Init loads the report, the breakdown and the workspace list, resolves
// names if the source can, and starts the refresh timer.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.reload(), m.startTimer()}
	if l, ok := m.source.(Labeler); ok {
		cmds = append(cmds, loadLabelsCmd(l))
	}
	return tea.Batch(cmds...)
}

// query is what the loads ask for.
func (m *Model) query() client.UsageQuery {
	return client.UsageQuery{
		Period:      m.period,
		Timezone:    m.timezone,
		WorkspaceID: m.filters.WorkspaceID,
		ModelID:     m.filters.ModelID,
		ProviderID:  m.filters.ProviderID,
		OwnerID:     m.filters.OwnerID,
		Tags:        m.filters.tagList(),
	}
}

// reload issues every load for the current query.
func (m *Model) reload() tea.Cmd {
	return tea.Batch(m.loadReport(), m.loadBreakdown(), m.loadWorkspaces(), m.loadBudgets(), m.loadGuardrails())
}

func (m *Model) next() int { m.seq++; return m.seq }

func (m *Model) loadReport() tea.Cmd {
	m.reportSeq, m.reportPending = m.next(), true
	return loadReportCmd(m.source, m.reportSeq, m.query())
}

func (m *Model) loadBreakdown() tea.Cmd {
	m.breakdownSeq, m.breakdownPending = m.next(), true
	m.breakdown.SetBy(m.by)
	return loadBreakdownCmd(m.source, m.breakdownSeq, m.by, m.query())
}

func (m *Model) loadWorkspaces() tea.Cmd {
	if m.workspace != "" {
		return nil
	}
	m.workspacesSeq = m.next()
	return loadWorkspacesCmd(m.source, m.workspacesSeq, m.query())
}

// startTimer starts a new refresh timer; the previous one's tick will be
// ignored (see tickMsg).
func (m *Model) startTimer() tea.Cmd {
	m.tickGen++
	return m.schedule()
}

// schedule asks the current timer for its next tick.
func (m *Model) schedule() tea.Cmd {
	if m.refresh <= 0 {
		return nil
	}
	return tickCmd(m.refresh, m.tickGen)
}

func (m *Model) loading() bool { return m.reportPending || m.breakdownPending }

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.ctx.Width, m.ctx.Height = msg.Width, msg.Height
		m.layout()
		return m, nil

	case tea.KeyMsg:
		return m, m.handleKey(msg)

	case reportLoadedMsg:
		if msg.seq != m.reportSeq {
			return m, nil
		}
		m.reportPending = false
		m.report = &msg.report
		m.state = stateReady
		m.totals.SetReport(m.report)
		m.chart.SetReport(m.report)
		m.clearErr(loadReport)
		return m, nil

	case breakdownLoadedMsg:
		if msg.seq != m.breakdownSeq {
			return m, nil
		}
		m.breakdownPending = false
		m.breakdown.SetData(msg.by, msg.breakdown)
		m.clearErr(loadBreakdown)
		m.layout() // the table's row count sets the chart's height
		return m, nil

	case workspacesLoadedMsg:
		if msg.seq == m.workspacesSeq {
			m.workspaces = msg.ids
			m.clearErr(loadWorkspaces)
		}
		return m, nil

	case budgetsLoadedMsg:
		if msg.seq == m.budgetsSeq {
			m.budgets.SetData(msg)
			m.layout() // the panel's line count takes from the chart
		}
		return m, nil

	case guardrailsLoadedMsg:
		if msg.seq == m.guardrailsSeq {
			m.guards.SetData(msg)
			m.layout() // the panel's line count takes from the chart
		}
		return m, nil

	case labelsLoadedMsg:
		for k, v := range msg.labels {
			m.ctx.Labels[k] = v
		}
		m.breakdown.Relabel()
		return m, nil

	case errMsg:
		return m, m.handleErr(msg)

	case tickMsg:
		if msg.gen != m.tickGen {
			return m, nil
		}
		// A load still in flight is not doubled; the next tick tries again.
		var cmds []tea.Cmd
		if !m.loading() {
			cmds = append(cmds, m.reload())
		}
		cmds = append(cmds, m.schedule())
		return m, tea.Batch(cmds...)

	case byChangedMsg:
		m.by = msg.by
		return m, m.loadBreakdown()

	case filterRowMsg:
		return m, m.filterBy(msg.by, msg.key)
	}
	return m, nil
}

func (m *Model) handleKey(k tea.KeyMsg) tea.Cmd {
	keys := m.ctx.Keys
	m.notice = ""
	switch {
	case key.Matches(k, keys.Quit):
		return tea.Quit
	case key.Matches(k, keys.Help):
		m.help.ShowAll = !m.help.ShowAll
		m.layout()
		return nil
	case key.Matches(k, keys.Refresh):
		return tea.Batch(m.reload(), m.startTimer())
	case key.Matches(k, keys.Period):
		return m.setPeriod(periodNames[(indexOf(periodNames, m.period)+1)%len(periodNames)])
	case key.Matches(k, keys.PeriodN):
		return m.setPeriod(periodNames[k.Runes[0]-'1'])
	case m.state != stateReady:
		// Until a report is on screen only the keys above make sense.
		return nil
	case key.Matches(k, keys.Workspace):
		return m.cycleWorkspace()
	case key.Matches(k, keys.ClearAll):
		if m.filters.empty() {
			return nil
		}
		m.filters = filters{}
		return m.reload()
	}
	// The rest belongs to the components: each acts on its own keys only.
	var cmds []tea.Cmd
	for _, c := range []component{m.chart, m.breakdown} {
		_, cmd := c.Update(k)
		cmds = append(cmds, cmd)
	}
	return tea.Batch(cmds...)
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func (m *Model) setPeriod(p string) tea.Cmd {
	if p == m.period {
		return nil
	}
	m.period = p
	return m.reload()
}

// cycleWorkspace moves the workspace filter to the next workspace with
// usage, and after the last one back to all workspaces.
func (m *Model) cycleWorkspace() tea.Cmd {
	if len(m.workspaces) == 0 {
		m.notice = "no workspace has usage in this period"
		return nil
	}
	i := indexOf(m.workspaces, m.filters.WorkspaceID) + 1 // -1 (all) → the first
	if i >= len(m.workspaces) {
		m.filters.WorkspaceID = ""
	} else {
		m.filters.WorkspaceID = m.workspaces[i]
	}
	return m.reload()
}

// filterBy narrows the report to one row of the breakdown.
func (m *Model) filterBy(by, id string) tea.Cmd {
	switch by {
	case "model", ToolDimension:
		m.filters.ModelID = id
	case "provider":
		m.filters.ProviderID = id
	case "owner":
		m.filters.OwnerID = id
	case "workspace":
		m.filters.WorkspaceID = id
	default:
		k, ok := strings.CutPrefix(by, TagPrefix)
		if !ok {
			return nil
		}
		m.filters = m.filters.withTag(k, id)
	}
	return m.reload()
}

// handleErr shows the newest load's error. Whatever was on screen stays:
// a failed refresh should not blank a dashboard someone is reading.
func (m *Model) handleErr(msg errMsg) tea.Cmd {
	switch msg.kind {
	case loadReport:
		if msg.seq != m.reportSeq {
			return nil
		}
		m.reportPending = false
		if m.report == nil {
			m.state = stateFailed
		}
	case loadBreakdown:
		if msg.seq != m.breakdownSeq {
			return nil
		}
		m.breakdownPending = false
		m.breakdown.SetLoading(false)
	case loadWorkspaces:
		if msg.seq != m.workspacesSeq {
			return nil
		}
	}
	m.errs[msg.kind] = msg.err
	return nil
}

// clearErr drops the error once the kind of load that failed succeeds.
func (m *Model) clearErr(kind loadKind) { delete(m.errs, kind) }

// shownErr is the error the status line shows when several loads failed:
// the report's first, as it matters most.
func (m *Model) shownErr() (loadKind, error) {
	for _, k := range []loadKind{loadReport, loadBreakdown, loadWorkspaces} {
		if err := m.errs[k]; err != nil {
			return k, err
		}
	}
	return 0, nil
}

// updated is when the data on screen was computed, on the user's clock.
func (m *Model) updated() string { return m.report.UpdatedAt.In(m.clock).Format("15:04:05") }

// Layout: header (2 lines), totals, chart, breakdown, status line, help.
const (
	headerHeight = 2
	statusHeight = 1
	minChart     = 6  // title, three lines of bars, axis, day labels
	minTable     = 4  // title, header, two rows
	noChartBelow = 12 // below this many lines for both, the table keeps them
)

// layout gives each component its share of the screen.
func (m *Model) layout() {
	w, h := m.ctx.Width, m.ctx.Height
	m.help.Width = w
	// The totals choose their form from the room there is (boxes or a
	// small table); the chart and the table share what they leave.
	m.totals.SetSize(w, h-headerHeight-statusHeight-lipgloss.Height(m.helpView()))
	m.budgets.SetSize(w, 0)
	m.guards.SetSize(w, 0)
	rest := h - headerHeight - statusHeight - lipgloss.Height(m.helpView()) - m.totals.Height() - m.budgets.Height() - m.guards.Height()
	chartHeight := 0
	if rest >= noChartBelow {
		chartHeight = max(rest/2, minChart)
		// A short breakdown leaves its unused lines to the chart.
		if need := m.breakdown.Need(); need > 0 && rest-max(need, minTable) > chartHeight {
			chartHeight = rest - max(need, minTable)
		}
	}
	m.chart.SetSize(w, chartHeight)
	m.breakdown.SetSize(w, max(rest-chartHeight, minTable))
}

func (m *Model) helpView() string {
	if !m.help.ShowAll {
		return m.help.View(dashboardHelp{m})
	}
	return m.fullHelpView()
}

// fullHelpView lays the key groups out in as many rows of columns as the
// width needs: bubbles' help draws them side by side and cuts what does
// not fit, which at 80 columns was the quit key itself.
func (m *Model) fullHelpView() string {
	unbounded := m.help
	unbounded.Width = 0
	var rows []string
	var line [][]key.Binding
	for _, g := range (dashboardHelp{m}).FullHelp() {
		next := append(line[:len(line):len(line)], g)
		if len(line) > 0 && lipgloss.Width(unbounded.FullHelpView(next)) > m.ctx.Width {
			rows = append(rows, unbounded.FullHelpView(line))
			line = [][]key.Binding{g}
			continue
		}
		line = next
	}
	if len(line) > 0 {
		rows = append(rows, unbounded.FullHelpView(line))
	}
	return strings.Join(rows, "\n")
}

// dashboardHelp gathers the root's keys and the components' into one
// help.KeyMap.
type dashboardHelp struct{ m *Model }

// ShortHelp fits the help line to the width: the keys that matter most
// first, and "? more" and "q quit" always, which truncation at the end of
// the line would otherwise cut first.
func (d dashboardHelp) ShortHelp() []key.Binding {
	k := d.m.ctx.Keys
	optional := []key.Binding{k.PeriodN}
	if d.m.state == stateReady {
		optional = append(optional, d.m.breakdown.ShortHelp()[:2]...)
		optional = append(optional, d.m.chart.ShortHelp()...)
		optional = append(optional, k.Workspace, k.ClearAll)
	}
	optional = append(optional, k.Refresh)
	always := []key.Binding{k.Help, k.Quit}
	width := func(b key.Binding) int {
		h := b.Help()
		return lipgloss.Width(h.Key) + 1 + lipgloss.Width(h.Desc) + lipgloss.Width(d.m.help.ShortSeparator)
	}
	budget := d.m.ctx.Width
	for _, b := range always {
		budget -= width(b)
	}
	var out []key.Binding
	for _, b := range optional {
		if !b.Enabled() {
			continue
		}
		if budget -= width(b); budget < 0 {
			break
		}
		out = append(out, b)
	}
	return append(out, always...)
}

func (d dashboardHelp) FullHelp() [][]key.Binding {
	k := d.m.ctx.Keys
	groups := [][]key.Binding{{k.PeriodN, k.Period, k.Workspace, k.ClearAll}}
	groups = append(groups, d.m.breakdown.FullHelp()...)
	last := []key.Binding{}
	for _, g := range d.m.chart.FullHelp() {
		last = append(last, g...)
	}
	less := k.Help
	less.SetHelp("?", "less")
	return append(groups, append(last, k.Refresh, less, k.Quit))
}

// View renders the screen from the model alone.
func (m *Model) View() string {
	if m.ctx.Width <= 0 {
		return "" // no size yet; bubbletea sends one right after start
	}
	st := m.ctx.Styles
	lines := []string{m.titleLine(), m.filterLine()}
	switch m.state {
	case stateLoading:
		lines = append(lines, "", st.Faint.Render("Loading the usage report…"))
	case stateFailed:
		// Wrapped, not cut: the cause (a refused connection, a 403) is
		// usually at the end of the message.
		lines = append(lines, "", st.Error.Width(m.ctx.Width).Render("Could not load usage: "+errText(m.errs[loadReport])),
			"", st.Faint.Render("r retries · q quits"))
	default:
		lines = append(lines, m.totals.View())
		if b := m.budgets.View(); b != "" {
			lines = append(lines, b)
		}
		if g := m.guards.View(); g != "" {
			lines = append(lines, g)
		}
		if c := m.chart.View(); c != "" {
			lines = append(lines, c)
		}
		lines = append(lines, m.breakdown.View(), m.statusLine())
	}
	body := strings.Join(lines, "\n")
	// The help line sits on the bottom line, however much the body took.
	if gap := m.ctx.Height - lipgloss.Height(body) - lipgloss.Height(m.helpView()); gap > 0 {
		body += strings.Repeat("\n", gap)
	}
	return body + "\n" + m.helpView()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// titleLine: what is shown on the left, how fresh it is on the right.
func (m *Model) titleLine() string {
	st := m.ctx.Styles
	left := st.Title.Render("gw usage")
	if m.org != "" {
		left += st.Faint.Render(" · ") + m.org
	}
	if m.workspace != "" {
		left += st.Faint.Render(" · workspace ") + m.workspace
	}
	left += st.Faint.Render(" · ") + st.Bold.Render(periodTitle(m.period))
	if m.report != nil {
		p := m.report.Period
		tz := p.Timezone
		if tz == "" {
			tz = "UTC"
		}
		left += st.Faint.Render(" · ") + DateRange(p.StartAt, p.EndAt, p.Timezone) + st.Faint.Render(" ("+tz+")")
	}
	var right []string
	switch {
	case m.loading():
		right = append(right, st.Notice.Render("loading…"))
	case m.report != nil:
		right = append(right, st.Faint.Render("updated "+m.updated()))
	}
	if m.refresh > 0 {
		right = append(right, st.Faint.Render("every "+m.refresh.String()))
	}
	return spread(left, strings.Join(right, st.Faint.Render(" · ")), m.ctx.Width)
}

// filterLine names the filters in force and the previous period compared.
func (m *Model) filterLine() string {
	st := m.ctx.Styles
	var parts []string
	add := func(name, id string) {
		if id != "" {
			parts = append(parts, name+" "+st.Bold.Render(m.ctx.Label(id)))
		}
	}
	add("workspace", m.filters.WorkspaceID)
	add("model", m.filters.ModelID)
	add("provider", m.filters.ProviderID)
	add("owner", m.filters.OwnerID)
	for _, t := range m.filters.tagList() {
		k, v, _ := strings.Cut(t, ":")
		parts = append(parts, "tag "+k+"="+st.Bold.Render(v))
	}
	left := st.Faint.Render("filters: ") + "none"
	if len(parts) > 0 {
		left = st.Faint.Render("filters: ") + strings.Join(parts, st.Faint.Render(" · "))
	}
	var right string
	if m.report != nil {
		p := m.report.Period
		right = st.Faint.Render("compared with " + DateRange(p.PreviousStartAt, p.PreviousEndAt, p.Timezone))
	}
	return spread(left, right, m.ctx.Width)
}

// statusLine is the last error, kept on screen with the data it could not
// replace, or a notice about the last key.
func (m *Model) statusLine() string {
	st := m.ctx.Styles
	kind, err := m.shownErr()
	switch {
	case err != nil:
		text := fmt.Sprintf("⚠ loading the %s failed", kind)
		if m.report != nil {
			text += " (showing the data of " + m.updated() + ")"
		}
		return ansi.Truncate(st.Error.Render(text+": "+shortErr(err)), m.ctx.Width, "…")
	case m.notice != "":
		return ansi.Truncate(st.Notice.Render(m.notice), m.ctx.Width, "…")
	case m.breakdown.data != nil && m.breakdown.data.Note != "":
		// Past the bound of tag combinations, the answer says what the
		// tag rows leave out.
		return ansi.Truncate(st.Notice.Render(m.breakdown.data.Note), m.ctx.Width, "…")
	case m.report != nil && m.report.Note != "":
		return ansi.Truncate(st.Notice.Render(m.report.Note), m.ctx.Width, "…")
	}
	return ""
}

// shortErr is the cause of a failed request, which is what fits on one
// line: a transport error's own message ("dial tcp …: connection refused")
// without the method and URL wrapped around it; API errors as they are.
func shortErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// spread puts left and right on one line of the given width; when both do
// not fit, the right side goes and the left is cut.
func spread(left, right string, width int) string {
	gap := width - lipgloss.Width(left) - lipgloss.Width(right)
	if right == "" || gap < 2 {
		return ansi.Truncate(left, width, "…")
	}
	return left + strings.Repeat(" ", gap) + right
}
