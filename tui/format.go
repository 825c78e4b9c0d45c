package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gw-gateway/gw/wire"
	"github.com/shopspring/decimal"
)

// Cost strings are exact decimals on the wire (DESIGN §3). The dashboard
// compares and sums them as decimals, so a percentage never drifts from
// what `gw usage report --json` says; only the chart converts to float64,
// because bar heights are approximate anyway.

// parseCost reads a wire cost. A malformed value counts as zero rather than
// failing the whole screen: the other counters are still worth showing.
func parseCost(s string) decimal.Decimal {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Zero
	}
	return d
}

// groupThousands puts commas between groups of three digits of an unsigned
// digit string.
func groupThousands(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	head := len(digits) % 3
	if head > 0 {
		b.WriteString(digits[:head])
	}
	for i := head; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

// formatInt writes a count in full, with thousands separators.
func formatInt(n int64) string {
	if n < 0 {
		return "-" + groupThousands(strconv.FormatInt(-n, 10))
	}
	return groupThousands(strconv.FormatInt(n, 10))
}

// formatCompact keeps a count within seven characters so the breakdown
// table's numeric columns stay narrow and the name column keeps its room:
// exact up to 99,999, then 123.4k, 12.35M, 1.23B.
func formatCompact(n int64) string {
	abs := n
	if abs < 0 {
		abs = -abs
	}
	f := float64(n)
	switch {
	case abs < 100_000:
		return formatInt(n)
	case abs < 1_000_000:
		return fmt.Sprintf("%.1fk", f/1e3)
	case abs < 1_000_000_000:
		return fmt.Sprintf("%.2fM", f/1e6)
	}
	return fmt.Sprintf("%.2fB", f/1e9)
}

// formatCost writes dollars for a person: cents from $1 up, four decimals
// below, because a day of a cheap model often costs a fraction of a cent
// and "$0.00" would hide it; smaller amounts get the decimals of two
// significant digits (formatCostPlaces).
func formatCost(d decimal.Decimal) string { return formatCostPlaces(d, costPlaces(d)) }

// costPlaces is how many decimals amounts up to largest need. Amounts
// shown together (a table column, a chart's scale) share it, so their
// decimal points line up.
func costPlaces(largest decimal.Decimal) int32 {
	if !largest.IsZero() && largest.Abs().LessThan(decimal.NewFromInt(1)) {
		return 4
	}
	return 2
}

// maxCostPlaces is the wire's precision: costs are exact to the
// nano-dollar.
const maxCostPlaces = 9

// formatCostPlaces writes d with places decimals, or more where places
// would not show two significant digits of an amount under a dollar: a row
// costing $0.00042 beside a 6 % share must not read "$0.0000" (issue 26,
// row 12). Such a cell's decimal point leaves the column's line; its
// digits are worth more.
func formatCostPlaces(d decimal.Decimal, places int32) string {
	if abs := d.Abs(); !abs.IsZero() {
		// Digits left of the point; zero or less for an amount under a
		// dollar, -3 for 0.00042.
		whole := int32(len(abs.Coefficient().String())) + abs.Exponent()
		places = max(places, min(2-whole, maxCostPlaces))
	}
	s := d.Abs().StringFixed(places)
	whole, frac, _ := strings.Cut(s, ".")
	out := "$" + groupThousands(whole)
	if frac != "" {
		out += "." + frac
	}
	if d.IsNegative() {
		return "-" + out
	}
	return out
}

// trend is the direction of a change against the previous period.
type trend int

const (
	trendNone trend = iota // nothing to compare: both periods empty
	trendFlat
	trendUp
	trendDown
	trendNew // the previous period had none, so no percentage exists
)

// change compares a value with the previous period's. The percentage has
// one decimal; a previous value of zero has no percentage, and says "new".
func change(cur, prev decimal.Decimal) (string, trend) {
	switch {
	case prev.IsZero() && cur.IsZero():
		return "—", trendNone
	case prev.IsZero():
		return "new", trendNew
	}
	pct := cur.Sub(prev).Div(prev.Abs()).Mul(decimal.NewFromInt(100)).Round(1)
	switch pct.Sign() {
	case 0:
		return "0.0%", trendFlat
	case 1:
		return "+" + pct.StringFixed(1) + "%", trendUp
	}
	return pct.StringFixed(1) + "%", trendDown
}

// ChangeInt is the percentage change of a count against the previous
// period, as the dashboard shows it ("+12.5%", "-3.0%", "new", "—").
func ChangeInt(cur, prev int64) string {
	s, _ := change(decimal.NewFromInt(cur), decimal.NewFromInt(prev))
	return s
}

// ChangeCost is ChangeInt for wire cost strings.
func ChangeCost(cur, prev string) string {
	s, _ := change(parseCost(cur), parseCost(prev))
	return s
}

// periodNames are the periods the dashboard switches between, in the order
// `p` cycles them; custom ranges belong to `gw usage report`.
var periodNames = wire.UsageDatelessPeriods

// periodTitle names a period in the header.
func periodTitle(p string) string {
	switch p {
	case "today":
		return "Today"
	case "7d":
		return "Last 7 days"
	case "30d":
		return "Last 30 days"
	case "month_to_date":
		return "Month to date"
	case "custom":
		return "Custom range"
	}
	return p
}

// DateRange writes a period as local days, e.g. "Apr 5 – May 4, 2026". The
// end of a report period is exclusive, so an end at local midnight belongs
// to the day before.
func DateRange(start, end time.Time, tz string) string {
	if loc, err := time.LoadLocation(tz); err == nil && tz != "" {
		start, end = start.In(loc), end.In(loc)
	}
	if end.After(start) && end.Hour() == 0 && end.Minute() == 0 && end.Second() == 0 && end.Nanosecond() == 0 {
		end = end.Add(-time.Nanosecond)
	}
	switch {
	case start.Year() == end.Year() && start.YearDay() == end.YearDay():
		return start.Format("Jan 2, 2006")
	case start.Year() == end.Year():
		return start.Format("Jan 2") + " – " + end.Format("Jan 2, 2006")
	}
	return start.Format("Jan 2, 2006") + " – " + end.Format("Jan 2, 2006")
}
