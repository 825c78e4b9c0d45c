package tui

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/wire"
)

// A budget's run-out forecast: at the rate of the last seven days, when
// does its spend reach its amount? Both `gw budgets` and the dashboard show
// it, from the same pure function, so they never disagree.

// Outcome is what a forecast concludes.
type Outcome string

const (
	// OutcomeUnknown: the spend of the last days could not be read.
	OutcomeUnknown Outcome = "unknown"
	// OutcomeNoSpend: nothing was spent in the last days, so there is no
	// rate to extrapolate.
	OutcomeNoSpend Outcome = "no_spend"
	// OutcomeExhausted: the period's spend has reached the amount already.
	OutcomeExhausted Outcome = "exhausted"
	// OutcomeRunsOut: at the rate, the amount is reached before the period
	// ends, at Forecast.At.
	OutcomeRunsOut Outcome = "runs_out"
	// OutcomeLastsPeriod: at the rate, the period ends first.
	OutcomeLastsPeriod Outcome = "lasts_period"
)

// Forecast is a budget's run-out forecast.
type Forecast struct {
	Outcome Outcome
	// At is when the budget runs out (OutcomeRunsOut only), cut to the
	// minute: earlier rather than later, since a forecast that comes true
	// a few seconds early is the harmless mistake.
	At time.Time
	// RatePerDay is the spend rate in USD per day, rounded to nano-dollars
	// for display; the forecast itself is computed from the exact sums.
	RatePerDay decimal.Decimal
}

// ForecastWindow is how far back the rate looks: the report period 7d.
const ForecastWindow = "7d"

// RunOut is the forecast's arithmetic. spent is what was spent over the
// window (a duration); left is what the budget can still spend (amount
// minus spent in its period); now and periodEnd bound the period's rest.
//
// The rate is spent/window and the run-out instant now + left/rate, i.e.
// now + left·window/spent. Whether that comes before periodEnd is decided
// by comparing left·window with spent·(periodEnd−now), products of exact
// decimals, so no rounding of a division can move a forecast across the
// period's end.
func RunOut(left, spent decimal.Decimal, window time.Duration, now, periodEnd time.Time) Forecast {
	f := Forecast{}
	if window > 0 {
		f.RatePerDay = spent.Mul(decimal.NewFromInt(int64(24 * time.Hour))).
			Div(decimal.NewFromInt(int64(window))).Round(9)
	}
	switch {
	case left.Sign() <= 0:
		f.Outcome = OutcomeExhausted
		return f
	case spent.Sign() <= 0 || window <= 0:
		f.Outcome = OutcomeNoSpend
		return f
	}
	rest := periodEnd.Sub(now)
	need := left.Mul(decimal.NewFromInt(int64(window)))        // left·window
	have := spent.Mul(decimal.NewFromInt(max(int64(rest), 0))) // spent·(end−now)
	if need.GreaterThanOrEqual(have) {
		f.Outcome = OutcomeLastsPeriod
		return f
	}
	// left·window/spent < rest, which fits in a Duration: no overflow.
	ns := need.Div(spent).IntPart()
	f.Outcome = OutcomeRunsOut
	f.At = now.Add(time.Duration(ns)).UTC().Truncate(time.Minute)
	return f
}

// String is the forecast for a person: "runs out on 2026-11-27 14:00 UTC",
// "lasts the period", "exhausted", or "—" when there is no rate.
func (f Forecast) String() string {
	switch f.Outcome {
	case OutcomeRunsOut:
		return "runs out on " + f.At.UTC().Format("2006-01-02 15:04") + " UTC"
	case OutcomeLastsPeriod:
		return "lasts the period"
	case OutcomeExhausted:
		return "exhausted"
	case OutcomeUnknown:
		return "?"
	}
	return "—"
}

// RecentSpend is what forecasts extrapolate: a workspace's spend over the
// last days and each of its inference keys' (for per_key budgets).
type RecentSpend struct {
	// Window is the span the spend was measured over.
	Window    time.Duration
	Workspace decimal.Decimal
	// Keys is by inference key id; nil when no per_key budget needed it.
	Keys map[string]decimal.Decimal
}

// RecentSpendOf reads a report of period ForecastWindow and, if given, its
// breakdown by inference_key. The window is the span the report covers
// (six whole days and today so far), not a flat seven days: dividing the
// spend of six and a half days by seven would understate the rate and
// forecast late.
func RecentSpendOf(r wire.UsageReport, byKey *wire.UsageBreakdown) RecentSpend {
	s := RecentSpend{Window: r.Period.EndAt.Sub(r.Period.StartAt), Workspace: parseCost(r.Totals.CostUSD)}
	if byKey != nil {
		s.Keys = map[string]decimal.Decimal{}
		for _, row := range byKey.Rows {
			s.Keys[row.Key] = parseCost(row.CostUSD)
		}
	}
	return s
}

// ForecastBudget forecasts one budget row at now. A shared budget runs at
// the workspace's rate: that is all the spend its target can cover, so for
// a budget of some users or keys (or some models) the forecast errs early,
// never late. A per_key row runs at its key's rate; the row a per_key
// budget has before any key used it (no key id) at the busiest key's,
// which is the key that would run out first.
//
// What is left is amount − spent, not remaining_usd: the reserved part is
// allowance data planes hold to spend, not spend, and it returns to the
// budget when unused, so it does not bring the run-out closer.
func ForecastBudget(b wire.BudgetState, s *RecentSpend, now time.Time) Forecast {
	amount, err1 := decimal.NewFromString(b.AmountUSD)
	spentInPeriod, err2 := decimal.NewFromString(b.SpentUSD)
	if err1 != nil || err2 != nil {
		return Forecast{Outcome: OutcomeUnknown}
	}
	left := amount.Sub(spentInPeriod)
	if s == nil {
		if left.Sign() <= 0 {
			return Forecast{Outcome: OutcomeExhausted}
		}
		return Forecast{Outcome: OutcomeUnknown}
	}
	recent := s.Workspace
	if b.Aggregation == "per_key" {
		recent = decimal.Zero
		switch {
		case b.InferenceKeyID != nil:
			recent = s.Keys[b.InferenceKeyID.String()]
		default:
			for _, v := range s.Keys {
				recent = decimal.Max(recent, v)
			}
		}
	}
	return RunOut(left, recent, s.Window, now, b.PeriodEnd)
}
