package tui

import (
	"fmt"
	"strings"

	"github.com/NimbleMarkets/ntcharts/barchart"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/wire"
)

// chartMetric is what the daily chart plots.
type chartMetric int

const (
	metricCost chartMetric = iota
	metricRequests
	metricTokens
	metricCount // number of metrics, for cycling
)

func (m chartMetric) title() string {
	switch m {
	case metricRequests:
		return "Requests per day"
	case metricTokens:
		return "Tokens per day (input + output)"
	}
	return "Cost per day"
}

func (m chartMetric) value(c wire.UsageCounters) float64 {
	switch m {
	case metricRequests:
		return float64(c.Requests)
	case metricTokens:
		return float64(c.InputTokens + c.OutputTokens)
	}
	return parseCost(c.CostUSD).InexactFloat64()
}

// format writes a value of the metric; scale is the largest value shown
// alongside it, which sets the decimals of a cost.
func (m chartMetric) format(v, scale float64) string {
	if m == metricCost {
		return formatCostPlaces(decimal.NewFromFloat(v), costPlaces(decimal.NewFromFloat(scale)))
	}
	return formatCompact(int64(v))
}

// maxBarWidth keeps a short period (today, a week) from turning into a few
// slabs across the whole screen.
const maxBarWidth = 12

// chartView is the daily bar chart (ntcharts). `m` cycles the metric: cost,
// requests, tokens.
type chartView struct {
	ctx           *ProgramContext
	daily         []wire.UsageDay
	total         wire.UsageCounters
	metric        chartMetric
	width, height int
	bars          barchart.Model
	gutter        []string // the value scale left of the bars, one entry per chart line
	wideLabels    string   // the label line when bars are too thin for labels of their own
}

var _ component = (*chartView)(nil)

func newChartView(ctx *ProgramContext) *chartView { return &chartView{ctx: ctx} }

func (c *chartView) Init() tea.Cmd { return nil }

func (c *chartView) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok && key.Matches(k, c.ctx.Keys.Metric) {
		c.metric = (c.metric + 1) % metricCount
		c.redraw()
	}
	return c, nil
}

func (c *chartView) ShortHelp() []key.Binding  { return []key.Binding{c.ctx.Keys.Metric} }
func (c *chartView) FullHelp() [][]key.Binding { return [][]key.Binding{c.ShortHelp()} }

func (c *chartView) SetSize(width, height int) {
	c.width, c.height = width, height
	c.redraw()
}

// SetReport takes the report's days and totals.
func (c *chartView) SetReport(r *wire.UsageReport) {
	c.daily, c.total = r.Daily, r.Totals
	c.redraw()
}

// redraw rebuilds the bar chart for the current data, metric and size.
// ntcharts scales bars against a maximum fixed at construction, so a new
// chart is cheaper to reason about than rescaling the old one.
func (c *chartView) redraw() {
	c.gutter = nil
	chartHeight := c.height - 1 // the title line
	if len(c.daily) == 0 || chartHeight < 3 || c.width < 10 {
		return
	}
	peak := 0.0
	for _, d := range c.daily {
		peak = max(peak, c.metric.value(d.UsageCounters))
	}
	scaleMax := peak
	if scaleMax <= 0 {
		scaleMax = 1 // an empty period still draws its axis and days
	}
	top, mid := c.metric.format(peak, peak), c.metric.format(peak/2, peak)
	gutterWidth := max(len(top), len(mid)) + 1
	barsWidth := c.width - gutterWidth
	if barsWidth < 1 {
		return
	}

	days := c.daily
	gap := 1
	barWidth := (barsWidth - (len(days) - 1)) / len(days)
	if barWidth < 1 {
		gap, barWidth = 0, barsWidth/len(days)
	}
	if barWidth < 1 {
		// More days than columns: the latest ones matter most.
		days, barWidth = days[len(days)-barsWidth:], 1
	}
	barWidth = min(barWidth, maxBarWidth)

	st := c.ctx.Styles
	data := make([]barchart.BarData, len(days))
	for i, d := range days {
		data[i] = barchart.BarData{
			Label:  dayLabel(d, barWidth),
			Values: []barchart.BarValue{{Name: d.Date.Format("2006-01-02"), Value: c.metric.value(d.UsageCounters), Style: st.Bar}},
		}
	}
	c.bars = barchart.New(barsWidth, chartHeight,
		barchart.WithNoAutoMaxValue(),
		barchart.WithMaxValue(scaleMax),
		barchart.WithNoAutoBarWidth(),
		barchart.WithBarWidth(barWidth),
		barchart.WithBarGap(gap),
		barchart.WithStyles(st.Axis, st.Faint),
		barchart.WithDataSet(data),
	)
	c.bars.Draw()
	c.wideLabels = ""
	if barWidth < 2 && len(days) > 1 {
		// Bars one column wide have no room for labels of their own; the
		// first and the last day frame the axis instead.
		first, last := days[0].Date.Format("Jan 02"), days[len(days)-1].Date.Format("Jan 02")
		if gapWidth := len(days)*(barWidth+gap) - gap - len(first) - len(last); gapWidth > 0 {
			c.wideLabels = first + strings.Repeat(" ", gapWidth) + last
		}
	}

	// The axis sits on the second line from the bottom, the day labels
	// under it; the tallest bar reaches the first line.
	c.gutter = make([]string, chartHeight)
	pad := func(s string) string { return fmt.Sprintf("%*s ", gutterWidth-1, s) }
	for i := range c.gutter {
		c.gutter[i] = strings.Repeat(" ", gutterWidth)
	}
	axis := chartHeight - 2
	c.gutter[0] = pad(top)
	if axis >= 6 {
		c.gutter[axis/2] = pad(mid)
	}
	c.gutter[axis] = pad("0")
}

// dayLabel names a day under its bar, as wide as the bar allows. The date
// is shown in the offset the server gave it, which is the report's time
// zone: converting it again could move midnight into the previous day.
func dayLabel(d wire.UsageDay, width int) string {
	switch {
	case width >= 6:
		return d.Date.Format("Jan 02")
	case width >= 2:
		return d.Date.Format("02")
	}
	return ""
}

func (c *chartView) View() string {
	if c.width <= 0 || c.height <= 0 {
		return ""
	}
	st := c.ctx.Styles
	total := c.metric.value(c.total)
	summary := "total " + c.metric.format(total, total)
	if len(c.daily) > 0 {
		best := c.daily[0]
		for _, d := range c.daily[1:] {
			if c.metric.value(d.UsageCounters) > c.metric.value(best.UsageCounters) {
				best = d
			}
		}
		if c.metric.value(best.UsageCounters) > 0 {
			peak := c.metric.value(best.UsageCounters)
			summary += " · peak " + c.metric.format(peak, peak) + " on " + best.Date.Format("Jan 2")
		}
	}
	title := st.Section.Render(c.metric.title()) + st.Faint.Render("  "+summary)
	lines := []string{ansi.Truncate(title, c.width, "…")}
	switch {
	case len(c.daily) == 0:
		lines = append(lines, st.Faint.Render("no usage in this period"))
	case c.gutter != nil:
		gutter := st.Faint.Render(strings.Join(c.gutter, "\n"))
		bars := c.bars.View()
		if c.wideLabels != "" {
			rows := strings.Split(bars, "\n")
			rows[len(rows)-1] = st.Faint.Render(c.wideLabels)
			bars = strings.Join(rows, "\n")
		}
		lines = append(lines, lipgloss.JoinHorizontal(lipgloss.Top, gutter, bars))
	}
	return strings.Join(lines, "\n")
}
