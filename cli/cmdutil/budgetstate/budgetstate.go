// Package budgetstate shows budget states with their forecasts, as gw
// budgets lists them and gw policies get shows a policy's own.
package budgetstate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// Row is a budget's state with its forecast, the json and yaml form
// of gw budgets: the API's members, then forecast.
type Row struct {
	wire.BudgetState
	Forecast ForecastOut `json:"forecast"`
}

// ForecastOut is a forecast for machines. The rate is per day over
// the span the 7d report covered; runs_out_at is set for runs_out only.
type ForecastOut struct {
	Outcome       tui.Outcome `json:"outcome"`
	RunsOutAt     *time.Time  `json:"runs_out_at"`
	RateUSDPerDay *string     `json:"rate_usd_per_day"`
}

// Forecast adds the forecasts to the states. Forecasts are a
// convenience on top of the state: when the recent spend cannot be read
// (the key may hold policies.read but not usage.read), the rows come back
// with the outcome unknown and a note saying why, rather than an error
// that would hide the state too.
func Forecast(ctx context.Context, c *client.Client, org, ws string, states []wire.BudgetState, now time.Time) ([]Row, string) {
	out := make([]Row, len(states))
	if len(states) == 0 {
		return out, ""
	}
	var spend *tui.RecentSpend
	var note string
	// The report filters by workspace id; the context often holds a slug.
	id, err := ws, error(nil)
	if uuid.Validate(ws) != nil {
		var w wire.Workspace
		if w, err = c.GetWorkspace(ctx, org, ws); err == nil {
			id = w.ID.String()
		}
	}
	if err == nil {
		var s tui.RecentSpend
		// The workspace's own report: a workspace-scoped key may read it.
		s, err = tui.ReadRecentSpend(ctx, tui.ClientSource{Client: c, Org: org, Workspace: ws}, id, tui.HasPerKey(states))
		spend = &s
	}
	switch {
	case client.IsStatus(err, http.StatusForbidden):
		spend, note = nil, "no forecast: this key may not read the workspace's usage (usage.read)"
	case err != nil:
		spend, note = nil, "no forecast: reading the last 7 days' spend failed: "+err.Error()
	}
	for i, s := range states {
		f := tui.ForecastBudget(s, spend, now)
		out[i] = Row{BudgetState: s, Forecast: ForecastOut{Outcome: f.Outcome}}
		if f.Outcome == tui.OutcomeRunsOut {
			at := f.At
			out[i].Forecast.RunsOutAt = &at
		}
		if spend != nil && f.Outcome != tui.OutcomeUnknown {
			rate := f.RatePerDay.String()
			out[i].Forecast.RateUSDPerDay = &rate
		}
	}
	return out, note
}

// Table is the rows for people. Amounts are the API's exact
// decimals, with two decimals at least: spent is often a sum of
// nano-dollar costs (13115.678901234), so a row holds three amounts in 80
// columns. The aggregation (the key column says shared or whose), the
// amount reserved, the remainder and the reset are wide (issue 26, row 9).
// withPolicy is false where the policy is known already (gw policies get).
func Table(rows []Row, keyName func(string) string, withPolicy bool) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"key", "period", "aggregation", "amount", "spent", "reserved", "remaining", "resets (utc)", "forecast (utc)"},
		Wide: []string{"aggregation", "reserved", "remaining", "resets (utc)"}, Shrink: []string{"key"}}
	if withPolicy {
		t.Headers = append([]string{"policy"}, t.Headers...)
		t.Shrink = []string{"policy", "key"}
	}
	for _, r := range rows {
		key := "(shared)"
		switch {
		case r.PlaygroundUserID != nil:
			// A user's playground requests, which have no key.
			key = "playground of user " + r.PlaygroundUserID.String()[:8]
		case r.InferenceKeyID != nil:
			key = keyName(r.InferenceKeyID.String())
		case r.Aggregation == "per_key":
			// No key has used it this period: each will have the amount.
			key = "(each key)"
		}
		forecast := tui.Forecast{Outcome: r.Forecast.Outcome, At: derefTime(r.Forecast.RunsOutAt)}.String()
		if r.Forecast.RunsOutAt != nil {
			forecast = runsOutCell(*r.Forecast.RunsOutAt)
		}
		row := []string{key, r.Period, r.Aggregation, cmdutil.MoneyCell(r.AmountUSD), cmdutil.MoneyCell(r.SpentUSD), cmdutil.MoneyCell(r.ReservedUSD),
			cmdutil.MoneyCell(r.RemainingUSD), r.PeriodEnd.UTC().Format("2006-01-02 15:04"), forecast}
		if withPolicy {
			row = append([]string{r.PolicyName}, row...)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// runsOutCell is a run-out in a table cell: within a budget's period (a
// day or a month), so the month and day say when without the year.
func runsOutCell(at time.Time) string {
	return "runs out " + at.UTC().Format("Jan 2 15:04")
}

// KeyNameOnly drops the "(sk-gw-…)" the name book adds: within one
// workspace's budgets the name says which key it is.
func KeyNameOnly(label string) string {
	if name, _, ok := strings.Cut(label, " (sk-gw-"); ok {
		return name
	}
	return label
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// WritePolicySection is the budgets section of gw policies get: the state
// of the policy's budgets, as gw budgets shows them. Failing to read them
// is said in the section, not as the command's error: the policy itself
// was shown.
func WritePolicySection(ctx context.Context, w io.Writer, c *client.Client, org, ws string, p *wire.Policy) error {
	var b strings.Builder
	b.WriteString("budgets:\n")
	states, err := c.ListBudgets(ctx, org, ws)
	if err != nil {
		fmt.Fprintf(&b, "  (could not read the budget state: %v)\n", err)
		_, err = io.WriteString(w, b.String())
		return err
	}
	mine := []wire.BudgetState{}
	for _, s := range states {
		if s.PolicyID == p.ID {
			mine = append(mine, s)
		}
	}
	rows, note := Forecast(ctx, c, org, ws, mine, time.Now())
	names := cmdutil.NewNameBook(c)
	t := Table(rows, func(id string) string { return KeyNameOnly(names.InferenceKeyName(ctx, org, ws, id)) }, false)
	// Without the policy column there is room for what remains.
	t.Wide = slices.DeleteFunc(t.Wide, func(h string) bool { return h == "remaining" })
	t = t.Narrow()
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.ToUpper(strings.Join(t.Headers, "\t")))
	for _, r := range t.Rows {
		fmt.Fprintln(tw, "  "+strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if note != "" {
		b.WriteString("  (" + note + ")\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// TagMarkerPrefix starts the marker a tag budget's key list begins with
// (tag:team=search): it names the tag the list follows and matches no key.
const TagMarkerPrefix = "tag:"

// SelectedKeyCount counts a selected_keys target's keys: its ids less
// the markers. gw budgets create-for-tag and gw policies list both count
// with it, so they agree (issue 26, row 12: one said 1, the other 2).
func SelectedKeyCount(ids []string) int {
	n := 0
	for _, id := range ids {
		if !strings.HasPrefix(id, TagMarkerPrefix) {
			n++
		}
	}
	return n
}

// SelectedKeysTag is the tag a tag budget's key list follows (team=search),
// "" for a list of keys chosen by hand.
func SelectedKeysTag(ids []string) string {
	for _, id := range ids {
		if tag, ok := strings.CutPrefix(id, TagMarkerPrefix); ok {
			return tag
		}
	}
	return ""
}
