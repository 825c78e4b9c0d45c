package cli

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
	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// BudgetsOptions configure gw budgets.
type BudgetsOptions struct {
	Factory *Factory
	Output  string
}

// NewCmdBudgets builds `gw budgets`, the state of the workspace's budgets.
// The group is its own list (there is nothing else to do with budgets
// here: they are rules of policies); `gw budgets list` says the same for
// those used to the other groups.
func NewCmdBudgets(f *Factory, runF func(context.Context, *BudgetsOptions) error) *cobra.Command {
	build := func(use string) *cobra.Command {
		opts := &BudgetsOptions{Factory: f}
		cmd := &cobra.Command{
			Use:   use,
			Short: "Show the workspace's budgets: spent, reserved, remaining, and when each runs out",
			Long: `Show the state of the workspace's budgets (budget rules of its policies) in
their current periods, one row per budget, and for a per_key budget one row
per inference key that has used it:

  key        (shared) for a budget the target's keys share; for a per_key
             budget, the key's name, or (each key) before any key used it
  period     day or month (UTC days and months)
  amount     the budget's amount for the period, in USD
  spent      what the period has spent
  forecast   when the budget runs out at the rate of the last 7 days'
             spend: the workspace's for a shared budget, the key's for a
             per_key one. "lasts the period" when the period ends first,
             "—" without spend in those days, "exhausted" when spent has
             reached the amount.

-o wide adds the aggregation, the amount reserved (allowance data planes
hold and have not reported spent), what remains to grant (amount − spent −
reserved) and when the period resets. Piped, the rows carry every column.

The workspace is the context's, or --workspace. -o json and -o yaml give the
API's budget states with a forecast member.`,
			Example: `  gw budgets
  gw budgets -o wide
  gw budgets --workspace research -o json`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := checkOutput(opts.Output); err != nil {
					return err
				}
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return budgetsRun(cmd.Context(), opts)
			},
		}
		addOutputFlag(cmd, &opts.Output)
		return cmd
	}
	cmd := build("budgets")
	list := build("list")
	list.Short = "Same as gw budgets"
	cmd.AddCommand(list, NewCmdBudgetsCreateForTag(f, nil))
	return cmd
}

// budgetOut is a budget's state with its forecast, the json and yaml form
// of gw budgets: the API's members, then forecast.
type budgetOut struct {
	wire.BudgetState
	Forecast budgetForecastOut `json:"forecast"`
}

// budgetForecastOut is a forecast for machines. The rate is per day over
// the span the 7d report covered; runs_out_at is set for runs_out only.
type budgetForecastOut struct {
	Outcome       tui.Outcome `json:"outcome"`
	RunsOutAt     *time.Time  `json:"runs_out_at"`
	RateUSDPerDay *string     `json:"rate_usd_per_day"`
}

func budgetsRun(ctx context.Context, opts *BudgetsOptions) error {
	c, org, ws, err := policiesClient(opts.Factory)
	if err != nil {
		return err
	}
	states, err := c.ListBudgets(ctx, org, ws)
	if err != nil {
		return err
	}
	rows, note := forecastBudgets(ctx, c, org, ws, states, time.Now())
	if note != "" {
		fmt.Fprintln(opts.Factory.IO.ErrOut, note)
	}
	for _, r := range states {
		if r.Warning != nil {
			fmt.Fprintf(opts.Factory.IO.ErrOut, "warning: policy %q: %s\n", r.PolicyName, *r.Warning)
		}
	}
	names := newNameBook(c)
	return opts.Factory.Print(opts.Output, rows, func() Table {
		t := budgetsTable(rows, func(id string) string { return keyNameOnly(names.inferenceKeyName(ctx, org, ws, id)) }, true)
		t.Empty = "no budgets in workspace " + ws + ": a policy's budget rules make them"
		return t
	})
}

// forecastBudgets adds the forecasts to the states. Forecasts are a
// convenience on top of the state: when the recent spend cannot be read
// (the key may hold policies.read but not usage.read), the rows come back
// with the outcome unknown and a note saying why, rather than an error
// that would hide the state too.
func forecastBudgets(ctx context.Context, c *client.Client, org, ws string, states []wire.BudgetState, now time.Time) ([]budgetOut, string) {
	out := make([]budgetOut, len(states))
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
		out[i] = budgetOut{BudgetState: s, Forecast: budgetForecastOut{Outcome: f.Outcome}}
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

// budgetsTable is the rows for people. Amounts are the API's exact
// decimals, with two decimals at least: spent is often a sum of
// nano-dollar costs (13115.678901234), so a row holds three amounts in 80
// columns. The aggregation (the key column says shared or whose), the
// amount reserved, the remainder and the reset are wide (issue 26, row 9).
// withPolicy is false where the policy is known already (gw policies get).
func budgetsTable(rows []budgetOut, keyName func(string) string, withPolicy bool) Table {
	t := Table{Headers: []string{"key", "period", "aggregation", "amount", "spent", "reserved", "remaining", "resets (utc)", "forecast (utc)"},
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
		row := []string{key, r.Period, r.Aggregation, moneyCell(r.AmountUSD), moneyCell(r.SpentUSD), moneyCell(r.ReservedUSD),
			moneyCell(r.RemainingUSD), r.PeriodEnd.UTC().Format("2006-01-02 15:04"), forecast}
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

// keyNameOnly drops the "(sk-gw-…)" the name book adds: within one
// workspace's budgets the name says which key it is.
func keyNameOnly(label string) string {
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

// writePolicyBudgets is the budgets section of gw policies get: the state
// of the policy's budgets, as gw budgets shows them. Failing to read them
// is said in the section, not as the command's error: the policy itself
// was shown.
func writePolicyBudgets(ctx context.Context, w io.Writer, c *client.Client, org, ws string, p *wire.Policy) error {
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
	rows, note := forecastBudgets(ctx, c, org, ws, mine, time.Now())
	names := newNameBook(c)
	t := budgetsTable(rows, func(id string) string { return keyNameOnly(names.inferenceKeyName(ctx, org, ws, id)) }, false)
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
