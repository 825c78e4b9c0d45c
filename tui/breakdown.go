package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/table"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// Dimensions are the breakdowns the dashboard offers, in the order tab
// cycles them: the server's, then the MCP tools'; the dashboard adds
// tag:KEY for the tag keys it is given.
var Dimensions = append(slices.Clone(wire.UsageDimensions), ToolDimension)

// ToolDimension is the breakdown by MCP tool (issue 30). A tool call is a
// usage event of provider "mcp" whose model is "mcp/<server>/<tool>", so
// the server needs no dimension of its own: it is the breakdown by model
// of the mcp provider's events (ServerBreakdown).
const ToolDimension = "tool"

// MCPProvider is the provider of every MCP tool call's usage event.
const MCPProvider = "mcp"

// ServerBreakdown is the server's breakdown behind one of Dimensions and
// the query it needs: by tool is by model, filtered to the mcp provider.
// ok is false when the query is filtered to another provider, which no
// tool call has: there is nothing to ask.
func ServerBreakdown(by string, q client.UsageQuery) (serverBy string, sq client.UsageQuery, ok bool) {
	if by != ToolDimension {
		return by, q, true
	}
	if q.ProviderID != "" && q.ProviderID != MCPProvider {
		return "model", q, false
	}
	q.ProviderID = MCPProvider
	return "model", q, true
}

// Breakdown reads one of Dimensions from src: a breakdown by tool comes
// back with By "tool" and its rows keyed by the tool's model id.
func Breakdown(ctx context.Context, src Source, by string, q client.UsageQuery) (wire.UsageBreakdown, error) {
	serverBy, sq, ok := ServerBreakdown(by, q)
	if !ok {
		return wire.UsageBreakdown{By: by, Rows: []wire.UsageBreakdownRow{}}, nil
	}
	b, err := src.Breakdown(ctx, serverBy, sq)
	b.By = by
	return b, err
}

// ToolName is a tool call's model id as a person reads it:
// mcp/<server>/<tool> is "<server>/<tool>".
func ToolName(model string) string {
	if rest, ok := strings.CutPrefix(model, MCPProvider+"/"); ok && rest != "" {
		return rest
	}
	return model
}

// TagPrefix starts a breakdown by one tag's values (tag:team).
const TagPrefix = "tag:"

// IsDimension says whether by is a breakdown the server offers: one of
// Dimensions or tag:KEY.
func IsDimension(by string) bool {
	if k, ok := strings.CutPrefix(by, TagPrefix); ok {
		return k != ""
	}
	for _, d := range Dimensions {
		if d == by {
			return true
		}
	}
	return false
}

// RowLabel names a breakdown row without a value: in a breakdown by tag,
// the requests without the tag, and those past the tag bound.
func RowLabel(r wire.UsageBreakdownRow) string {
	switch {
	case r.OverTagLimit:
		return "(over tag limit)"
	case r.NoValue:
		return "(no tag)"
	}
	return ""
}

func dimensionTitle(by string) string {
	if k, ok := strings.CutPrefix(by, TagPrefix); ok {
		return "tag " + k
	}
	switch by {
	case "inference_key":
		return "inference key"
	case "requested_model":
		// model is the model that answered; they differ after a fallback.
		return "requested model"
	case ToolDimension:
		return "MCP tool"
	}
	return by
}

// breakdownView is the table of the period split by one dimension. It owns
// its keys: tab and shift+tab ask the root for another dimension, enter
// asks to filter by the selected row, the rest moves through the table.
type breakdownView struct {
	ctx *ProgramContext
	// dims are the dimensions tab cycles: Dimensions and the tag keys'.
	dims    []string
	by      string // the dimension shown, or being loaded
	data    *wire.UsageBreakdown
	dataBy  string // the dimension data holds; differs from by while a switch loads
	loading bool
	table   table.Model
	// rows are the rendered rows without the selection marker, which
	// mark adds to the row under the cursor.
	rows   []table.Row
	width  int
	height int
}

// selectionMarker starts the selected row's first cell: the Selected
// style's reverse video is all a terminal without colours (NO_COLOR, a
// dumb terminal) would otherwise not show.
const selectionMarker = "› "

var _ component = (*breakdownView)(nil)

func newBreakdownView(ctx *ProgramContext, by string, tagKeys []string) *breakdownView {
	t := table.New(table.WithFocused(true))
	t.SetStyles(table.Styles{Header: ctx.Styles.Header, Cell: ctx.Styles.Cell, Selected: ctx.Styles.Selected})
	dims := append([]string{}, Dimensions...)
	for _, k := range tagKeys {
		dims = append(dims, TagPrefix+k)
	}
	return &breakdownView{ctx: ctx, dims: dims, by: by, table: t}
}

func (b *breakdownView) Init() tea.Cmd { return nil }

func (b *breakdownView) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return b, nil
	}
	switch {
	case key.Matches(k, b.ctx.Keys.NextBy):
		return b, emit(byChangedMsg{by: b.step(1)})
	case key.Matches(k, b.ctx.Keys.PrevBy):
		return b, emit(byChangedMsg{by: b.step(-1)})
	case !b.tableShown():
		// Neither enter nor the arrows act on rows nobody can see.
		return b, nil
	case key.Matches(k, b.filterKey()):
		if row, ok := b.selected(); ok && row.Key != "" && !row.NoValue && !row.OverTagLimit {
			return b, emit(filterRowMsg{by: b.dataBy, key: row.Key})
		}
		return b, nil
	}
	var cmd tea.Cmd
	before := b.table.Cursor()
	b.table, cmd = b.table.Update(msg)
	if b.table.Cursor() != before {
		b.mark()
	}
	return b, cmd
}

// tableShown: the rows are on screen (View draws the table).
func (b *breakdownView) tableShown() bool {
	return b.data != nil && b.dataBy == b.by && len(b.data.Rows) > 0 && b.width > 0 && b.height > 1
}

// emit wraps a message in a command: how a component asks the root for
// something only the root can do (load data, change the query).
func emit(msg tea.Msg) tea.Cmd { return func() tea.Msg { return msg } }

func (b *breakdownView) step(delta int) string {
	i := 0
	for j, d := range b.dims {
		if d == b.by {
			i = j
		}
	}
	return b.dims[(i+delta+len(b.dims))%len(b.dims)]
}

// filterKey is enter, switched off for inference keys, which the report
// has no query parameter for (spec 4.6), and for requested models, which
// the dashboard's filters do not offer: there is nothing to filter on.
func (b *breakdownView) filterKey() key.Binding {
	k := b.ctx.Keys.FilterRow
	k.SetEnabled(b.tableShown() && b.dataBy != "inference_key" && b.dataBy != "requested_model")
	return k
}

func (b *breakdownView) selected() (wire.UsageBreakdownRow, bool) {
	i := b.table.Cursor()
	if b.data == nil || b.dataBy != b.by || i < 0 || i >= len(b.data.Rows) {
		return wire.UsageBreakdownRow{}, false
	}
	return b.data.Rows[i], true
}

func (b *breakdownView) ShortHelp() []key.Binding {
	return []key.Binding{b.ctx.Keys.NextBy, b.filterKey(), b.table.KeyMap.LineUp, b.table.KeyMap.LineDown}
}

func (b *breakdownView) FullHelp() [][]key.Binding {
	return append([][]key.Binding{{b.ctx.Keys.NextBy, b.ctx.Keys.PrevBy, b.filterKey()}}, b.table.KeyMap.FullHelp()...)
}

// SetBy starts showing another dimension; its rows arrive with SetData.
func (b *breakdownView) SetBy(by string) {
	b.by = by
	b.loading = true
	if b.dataBy != by {
		b.table.SetRows(nil)
		b.table.SetCursor(0)
	}
}

// SetLoading marks a refresh of the current dimension in flight.
func (b *breakdownView) SetLoading(loading bool) { b.loading = loading }

// SetData shows a loaded breakdown. The cursor stays where it was when
// the dimension did not change, so an auto refresh does not move it.
func (b *breakdownView) SetData(by string, d wire.UsageBreakdown) {
	if b.dataBy != by {
		b.table.SetCursor(0)
	}
	b.data, b.dataBy, b.loading = &d, by, false
	b.fill()
}

// Need is how many lines the breakdown would use to show every row (title,
// header, rows), or 0 while it has nothing to show; the root gives the
// chart whatever the table does not need.
func (b *breakdownView) Need() int {
	if b.data == nil || b.dataBy != b.by {
		return 0
	}
	return 2 + max(len(b.data.Rows), 1)
}

// Relabel re-renders the rows after names were resolved.
func (b *breakdownView) Relabel() { b.fill() }

func (b *breakdownView) SetSize(width, height int) {
	b.width, b.height = width, height
	b.table.SetWidth(width)
	b.table.SetHeight(max(height-1, 1)) // the title line
	b.fill()
}

// Column widths. Counts are compact (at most seven characters), so the
// numeric columns stay narrow and the name column keeps the rest; the
// cache columns go first when the screen is too narrow for all.
const (
	numWidth   = 9
	costWidth  = 10
	shareWidth = 6
	cellPad    = 2 // the Cell style's padding, one each side
	minName    = 24
)

type breakdownColumn struct {
	title string
	width int
	value func(r wire.UsageBreakdownRow, c rowContext) string
}

// rowContext is what a cell needs beyond its row: the row's share of the
// cost, and the decimals the cost column uses for every row.
type rowContext struct {
	share      string
	costPlaces int32
}

func (b *breakdownView) columnSet() []breakdownColumn {
	count := func(title string, f func(wire.UsageCounters) int64) breakdownColumn {
		return breakdownColumn{title, numWidth, func(r wire.UsageBreakdownRow, _ rowContext) string { return formatCompact(f(r.UsageCounters)) }}
	}
	cols := []breakdownColumn{
		count("Requests", func(c wire.UsageCounters) int64 { return c.Requests }),
		count("Input", func(c wire.UsageCounters) int64 { return c.InputTokens }),
		count("Output", func(c wire.UsageCounters) int64 { return c.OutputTokens }),
		count("Cache rd", func(c wire.UsageCounters) int64 { return c.CacheReadTokens }),
		count("Cache wr", func(c wire.UsageCounters) int64 { return c.CacheWriteTokens }),
		{"Cost", costWidth, func(r wire.UsageBreakdownRow, c rowContext) string {
			return formatCostPlaces(parseCost(r.CostUSD), c.costPlaces)
		}},
		{"Share", shareWidth, func(_ wire.UsageBreakdownRow, c rowContext) string { return c.share }},
	}
	// Narrower screens drop the cache columns, then input and output;
	// requests, cost and share always stay.
	for _, set := range [][]breakdownColumn{cols, append(cols[:3:3], cols[5:]...), {cols[0], cols[5], cols[6]}} {
		fixed := 0
		for _, c := range set {
			fixed += c.width + cellPad
		}
		if b.width-fixed-cellPad >= minName {
			return set
		}
	}
	return []breakdownColumn{cols[0], cols[5], cols[6]}
}

func (b *breakdownView) nameWidth(cols []breakdownColumn) int {
	w := b.width - cellPad
	for _, c := range cols {
		w -= c.width + cellPad
	}
	return max(w, 1)
}

func (b *breakdownView) columns() []table.Column {
	cols := b.columnSet()
	out := []table.Column{{Title: strings.ToUpper(dimensionTitle(b.by)[:1]) + dimensionTitle(b.by)[1:], Width: b.nameWidth(cols)}}
	for _, c := range cols {
		// Numbers are right-aligned by padding them to the column width;
		// bubbles' table itself only aligns left.
		out = append(out, table.Column{Title: fmt.Sprintf("%*s", c.width, c.title), Width: c.width})
	}
	return out
}

// fill renders the rows. bubbles' table renders as soon as columns or
// rows change and expects every row to have a cell per column, so the old
// rows go before the column set (which depends on the width) changes; the
// cursor is put back afterwards.
func (b *breakdownView) fill() {
	cursor := b.table.Cursor()
	b.table.SetRows(nil)
	b.rows = nil
	b.table.SetColumns(b.columns())
	if b.data == nil || b.dataBy != b.by {
		return
	}
	total, largest := decimal.Zero, decimal.Zero
	for _, r := range b.data.Rows {
		cost := parseCost(r.CostUSD)
		total, largest = total.Add(cost), decimal.Max(largest, cost)
	}
	places := costPlaces(largest)
	cols := b.columnSet()
	rows := make([]table.Row, len(b.data.Rows))
	for i, r := range b.data.Rows {
		share := "—"
		if !total.IsZero() {
			share = parseCost(r.CostUSD).Div(total).Mul(decimal.NewFromInt(100)).StringFixed(1) + "%"
		}
		name := b.ctx.Label(r.Key)
		if b.dataBy == ToolDimension && r.Key != "" {
			name = ToolName(r.Key)
		}
		if l := RowLabel(r); l != "" {
			name = l
		}
		row := table.Row{name}
		for _, c := range cols {
			row = append(row, fmt.Sprintf("%*s", c.width, c.value(r, rowContext{share: share, costPlaces: places})))
		}
		rows[i] = row
	}
	b.rows = rows
	b.table.SetRows(rows)
	b.table.SetCursor(cursor)
	b.mark()
}

// mark puts the selection marker on the row under the cursor, and room
// for it on the others, so names stay aligned.
func (b *breakdownView) mark() {
	if len(b.rows) == 0 {
		return
	}
	cursor := b.table.Cursor()
	marked := make([]table.Row, len(b.rows))
	for i, r := range b.rows {
		lead := strings.Repeat(" ", len([]rune(selectionMarker)))
		if i == cursor {
			lead = selectionMarker
		}
		marked[i] = append(table.Row{lead + r[0]}, r[1:]...)
	}
	b.table.SetRows(marked)
	b.table.SetCursor(cursor)
}

func (b *breakdownView) View() string {
	if b.width <= 0 || b.height <= 0 {
		return ""
	}
	st := b.ctx.Styles
	title := st.Section.Render("By " + dimensionTitle(b.by))
	var note string
	switch {
	case b.loading && (b.data == nil || b.dataBy != b.by):
		note = "loading…"
	case b.data != nil && b.dataBy == b.by:
		note = fmt.Sprintf("%d rows", len(b.data.Rows))
		if len(b.data.Rows) == 1 {
			note = "1 row"
		}
	}
	if note != "" {
		title += st.Faint.Render("  " + note)
	}
	lines := []string{ansi.Truncate(title, b.width, "…")}
	switch {
	case b.data != nil && b.dataBy == b.by && len(b.data.Rows) == 0 && b.by == ToolDimension:
		lines = append(lines, st.Faint.Render("no MCP tool calls in this period"))
	case b.data != nil && b.dataBy == b.by && len(b.data.Rows) == 0:
		lines = append(lines, st.Faint.Render("no usage in this period"))
	case b.data != nil && b.dataBy == b.by && b.height > 1:
		lines = append(lines, b.table.View())
	}
	return strings.Join(lines, "\n")
}
