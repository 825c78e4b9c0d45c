// Package usage is `gw usage`: the dashboard, the report, the CSV export
// and the explanation of one request's cost.
package usage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// dashboardPeriods are the periods the dashboard switches between; a
// custom range needs dates, which only `gw usage report` takes.
var dashboardPeriods = wire.UsageDatelessPeriods

// reportPeriods are the report's periods (spec 4.6).
var reportPeriods = wire.UsagePeriods

// DashboardOptions configure gw usage, the dashboard.
type DashboardOptions struct {
	IO              *cmdutil.IOStreams
	Client          func() (*client.Client, cmdutil.Settings, error)
	Period          string
	Timezone        string
	WorkspaceFilter string
	Refresh         time.Duration
	// By is the breakdown to start with; TagKeys add tag:KEY breakdowns;
	// Tags (KEY=VALUE) start it filtered by tag.
	By      string
	TagKeys []string
	Tags    []string
	// workspaceFlag: --workspace was given on the command line.
	workspaceFlag bool
}

// NewCmd builds `gw usage` (the dashboard) with `gw usage report`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := NewCmdDashboard(f, nil)
	cmd.AddCommand(NewCmdReport(f, nil), NewCmdExport(f, nil), NewCmdExplain(f, nil), NewCmdPayload(f, nil), NewCmdGuardrails(f, nil))
	return cmd
}

// NewCmdDashboard builds the `gw usage` command itself.
func NewCmdDashboard(f *cmdutil.Factory, runF func(context.Context, *DashboardOptions) error) *cobra.Command {
	opts := &DashboardOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "usage [--period P] [--timezone TZ] [--workspace-filter WS] [--tag-key KEY]... [--tag KEY=VALUE]... [--refresh 30s]",
		Short: "Usage dashboard: totals against the previous period, daily chart, breakdowns",
		Long: `Show the organization's usage in an interactive dashboard: totals against the
previous period, a daily chart, and a breakdown by model, provider, owner,
inference key, workspace or MCP tool (<server>/<tool>: the spend of tool
calls, issue 30), and by each tag key given with --tag-key (team,
feature, env…). Keys: 1-4 or p switch the period, tab the breakdown, enter
filters by the selected row (a tag's value, too), w cycles the workspace
filter, c clears the filters, m switches the chart's metric, r refreshes, ?
shows every key, q quits.

` + usageWorkspaceHelp + `

It needs a terminal; scripts use gw usage report (--json).`,
		Example: `  gw usage
  gw usage --workspace research              # one workspace's own usage
  gw usage --period 7d --timezone Europe/Paris --workspace-filter research
  gw usage --tag-key team --tag-key feature --by tag:team   # cost centres
  gw usage --tag-key feature --tag team=search              # one team's features
  gw usage report --by model --period month_to_date
  gw usage report --start-date 2026-03-01 --end-date 2026-03-31 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.OneOf("period", opts.Period, dashboardPeriods...); err != nil {
				return err
			}
			if opts.Refresh < 0 || (opts.Refresh > 0 && opts.Refresh < time.Second) {
				return cmdutil.UsageError{Err: fmt.Errorf("--refresh must be 0 (off) or at least 1s, not %s", opts.Refresh)}
			}
			opts.workspaceFlag = cmd.Flags().Changed("workspace")
			if opts.By != "" && !tui.IsDimension(opts.By) {
				return cmdutil.UsageError{Err: fmt.Errorf("--by must be one of %s or tag:KEY, not %q", strings.Join(tui.Dimensions, ", "), opts.By)}
			}
			if k, ok := strings.CutPrefix(opts.By, tui.TagPrefix); ok && !slices.Contains(opts.TagKeys, k) {
				opts.TagKeys = append(opts.TagKeys, k)
			}
			if _, err := tagFilters(opts.Tags); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return usageDashboardRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Period, "period", "30d", "period to start with: today, 7d, 30d or month_to_date")
	fl.StringVar(&opts.Timezone, "timezone", "", "IANA time zone that cuts the days, e.g. Europe/Paris (default: the server's, UTC)")
	fl.StringVar(&opts.WorkspaceFilter, "workspace-filter", "", "start filtered to one workspace (UUID or slug)")
	fl.DurationVar(&opts.Refresh, "refresh", tui.DefaultRefresh, "auto refresh interval; 0 turns it off")
	fl.StringVar(&opts.By, "by", "", "breakdown to start with: a dimension or tag:KEY (default model)")
	fl.StringArrayVar(&opts.TagKeys, "tag-key", nil, "offer a breakdown by this tag key (repeatable)")
	fl.StringArrayVar(&opts.Tags, "tag", nil, "start filtered to requests with this tag, KEY=VALUE (repeatable: all must match)")
	return cmd
}

// tagFilters turns --tag KEY=VALUE flags into the report's KEY:VALUE
// filters; the server checks the tag rules.
func tagFilters(pairs []string) ([]string, error) {
	out := make([]string, 0, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || v == "" {
			return nil, cmdutil.UsageError{Err: fmt.Errorf("--tag %q: want KEY=VALUE, e.g. team=search", p)}
		}
		if m := tags.CheckKey(k); m != "" {
			return nil, cmdutil.UsageError{Err: fmt.Errorf("--tag %q: %s", p, m)}
		}
		out = append(out, k+":"+v)
	}
	return out, nil
}

// usageWorkspaceHelp says how the two workspace flags differ.
const usageWorkspaceHelp = `With a workspace (--workspace, GW_WORKSPACE, or the context's, as after gw
login --workspace) the numbers are that workspace's own, read at its own
URL: all a workspace-scoped key may read. --workspace-filter instead narrows
the organization's view to one workspace (an organization-scope key); it
wins over a workspace from GW_WORKSPACE or the context.`

// usageScope is where gw usage reads: the workspace of the settings
// (--workspace, GW_WORKSPACE or the context's), else the organization.
// filter is --workspace-filter, which narrows an organization's view: given,
// it wins over a workspace from the environment or the context, and
// contradicts one given with --workspace (workspaceFlag).
func usageScope(s cmdutil.Settings, filter string, workspaceFlag bool) (org, workspace string, err error) {
	org, err = s.RequireOrg()
	if err != nil {
		return "", "", err
	}
	if filter == "" {
		return org, s.Workspace, nil
	}
	if workspaceFlag {
		return "", "", cmdutil.UsageError{Err: errors.New("--workspace shows one workspace's own usage and --workspace-filter narrows the organization's; pass one")}
	}
	return org, "", nil
}

// errNeedsTerminal is the answer to `gw usage` in a pipe or a script:
// the dashboard draws on a terminal and reads keys from one.
var errNeedsTerminal = cmdutil.UsageError{Err: errors.New("gw usage is an interactive dashboard and needs a terminal; use gw usage report (with --json for scripts)")}

func usageDashboardRun(ctx context.Context, opts *DashboardOptions) error {
	ios := opts.IO
	if !ios.IsTerminal() || !ios.CanPrompt() {
		return errNeedsTerminal
	}
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, workspace, err := usageScope(s, opts.WorkspaceFilter, opts.workspaceFlag)
	if err != nil {
		return err
	}
	to, err := TUIOptions(ctx, c, org, workspace, opts)
	if err != nil {
		return err
	}
	return tui.Run(ctx, to, ios.In, ios.Out)
}

// TUIOptions (exported for the tests that drive the dashboard against a
// real server from cli) prepares the dashboard of the organization or, with
// workspace, of that workspace. Its header names them: the context usually
// holds the ids login stored.
func TUIOptions(ctx context.Context, c *client.Client, org, workspace string, opts *DashboardOptions) (tui.Options, error) {
	ws, err := resolveWorkspaceFilter(ctx, c, org, opts.WorkspaceFilter)
	if err != nil {
		return tui.Options{}, err
	}
	names := cmdutil.NewNameBook(c)
	to := tui.Options{
		Source:      tui.ClientSource{Client: c, Org: org, Workspace: workspace},
		Org:         names.OrgName(ctx, org),
		Period:      opts.Period,
		Timezone:    opts.Timezone,
		WorkspaceID: ws,
		Refresh:     opts.Refresh,
		By:          opts.By,
		TagKeys:     opts.TagKeys,
	}
	to.Tags, _ = tagFilters(opts.Tags)
	if workspace != "" {
		to.Workspace = names.WorkspaceName(ctx, org, workspace)
		// Best effort: without the workspace's id the budgets panel
		// cannot filter the spend its forecasts need; the dashboard is
		// still worth showing without it.
		to.BudgetWorkspaceID, _ = resolveWorkspaceFilter(ctx, c, org, workspace)
	}
	return to, nil
}

// resolveWorkspaceFilter turns a workspace slug into its id: the report
// filters on workspace_id, while people know their workspaces by slug.
func resolveWorkspaceFilter(ctx context.Context, c *client.Client, org, ws string) (string, error) {
	if ws == "" {
		return "", nil
	}
	if _, err := uuid.Parse(ws); err == nil {
		return ws, nil
	}
	w, err := c.GetWorkspace(ctx, org, ws)
	if err != nil {
		return "", fmt.Errorf("--workspace-filter %s: %w", ws, err)
	}
	return w.ID.String(), nil
}

// ReportOptions configure gw usage report.
type ReportOptions struct {
	IO              *cmdutil.IOStreams
	Client          func() (*client.Client, cmdutil.Settings, error)
	Period          string
	Timezone        string
	StartDate       string
	EndDate         string
	Model           string
	Provider        string
	Owner           string
	ManagementKey   string
	Credential      string
	WorkspaceFilter string
	By              string
	Output          cmdutil.Output
	// Tags are --tag KEY=VALUE filters (all must match).
	Tags []string
	// workspaceFlag: --workspace was given on the command line.
	workspaceFlag bool
}

// NewCmdReport builds `gw usage report`, the dashboard's data for
// scripts and pipes.
func NewCmdReport(f *cmdutil.Factory, runF func(context.Context, *ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{IO: f.IO, Client: f.AuthedClient}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report [--period P | --start-date D --end-date D] [filters] [--by DIMENSION] [--json | -o table|json|yaml]",
		Short: "Print the usage report (totals, previous period, days) or a breakdown",
		Long: `Print the organization's usage report: one row per day, then the totals, the
previous period's totals and the change. With --by, print the period split by
model, provider, owner, inference_key, workspace or tool (the MCP tools'
calls, as <server>/<tool>), or by the values of one tag (--by tag:team) instead, largest cost first: requests without the tag
are the row "(no tag)". --tag KEY=VALUE (repeatable) keeps the requests
carrying every tag given. --json (or -o json) prints the API's report as it
is.

` + usageWorkspaceHelp + `

A custom range is --start-date and --end-date (YYYY-MM-DD, both included),
which imply --period custom.`,
		Example: `  gw usage report --by model
  gw usage report --by tool --period 7d                # MCP tool spend
  gw usage report --by tag:team --period month_to_date
  gw usage report --by tag:feature --tag team=search --tag env=prod
  gw usage report --workspace search --by model --period 7d
  gw usage report --workspace-filter search --json
  gw usage report --start-date 2026-03-01 --end-date 2026-03-31 -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			if asJSON {
				if fl.Changed("output") && opts.Output.Format != cmdutil.OutputJSON {
					return cmdutil.UsageError{Err: fmt.Errorf("--json and --output %s disagree", opts.Output.Format)}
				}
				opts.Output.Format = cmdutil.OutputJSON
			}
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if opts.By != "" && !tui.IsDimension(opts.By) {
				return cmdutil.UsageError{Err: fmt.Errorf("--by must be one of %s or tag:KEY, not %q", strings.Join(tui.Dimensions, ", "), opts.By)}
			}
			if _, err := tagFilters(opts.Tags); err != nil {
				return err
			}
			if err := opts.checkPeriod(fl.Changed("period")); err != nil {
				return err
			}
			if err := opts.checkIDFlags(); err != nil {
				return err
			}
			opts.workspaceFlag = fl.Changed("workspace")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return cmdutil.WithFlags(usageReportRun(cmd.Context(), opts), usageQueryFields...)
		},
	}
	fl := cmd.Flags()
	cmdutil.AddOutput(cmd, &opts.Output)
	fl.BoolVar(&asJSON, "json", false, "print JSON (same as --output json)")
	opts.addReportFlags(fl)
	fl.StringVar(&opts.By, "by", "", "print a breakdown by model, provider, owner, inference_key, workspace, tool (MCP tools) or tag:KEY")
	return cmd
}

// addReportFlags defines the period and filter flags gw usage report and
// gw usage export share.
func (opts *ReportOptions) addReportFlags(fl *pflag.FlagSet) {
	fl.StringVar(&opts.Period, "period", "30d", "today, 7d, 30d, month_to_date or custom")
	fl.StringVar(&opts.Timezone, "timezone", "", "IANA time zone that cuts the days, e.g. Europe/Paris (default: the server's, UTC)")
	fl.StringVar(&opts.StartDate, "start-date", "", "first day of a custom range, YYYY-MM-DD")
	fl.StringVar(&opts.EndDate, "end-date", "", "last day of a custom range, YYYY-MM-DD")
	fl.StringVar(&opts.Model, "model", "", "only this model, e.g. openai/gpt-4o-mini")
	fl.StringVar(&opts.Provider, "provider", "", "only this provider")
	fl.StringVar(&opts.Owner, "owner", "", "only requests of keys owned by this user (UUID)")
	fl.StringVar(&opts.ManagementKey, "management-key", "", "only requests made with this management key (UUID)")
	fl.StringVar(&opts.Credential, "credential", "", "only requests served with this provider credential (UUID)")
	fl.StringVar(&opts.WorkspaceFilter, "workspace-filter", "", "only this workspace (UUID or slug)")
	fl.StringArrayVar(&opts.Tags, "tag", nil, "only requests with this tag, KEY=VALUE (repeatable: all must match)")
}

// usageQueryFields are a report's query parameters and the flags that
// set them.
var usageQueryFields = []cmdutil.FlagField{
	{Loc: "query.timezone", Flag: "--timezone", Want: "an IANA time zone, e.g. Europe/Paris", Input: true},
	{Loc: "query.period", Flag: "--period", Want: strings.Join(reportPeriods, ", ")},
	{Loc: "query.start_date", Flag: "--start-date", Want: "a date, YYYY-MM-DD"},
	{Loc: "query.end_date", Flag: "--end-date", Want: "a date, YYYY-MM-DD"},
	{Loc: "query.owner_id", Flag: "--owner", Want: "a user's UUID"},
	{Loc: "query.management_key_id", Flag: "--management-key", Want: "a management key's UUID"},
	{Loc: "query.provider_credential_id", Flag: "--credential", Want: "a provider credential's UUID"},
	{Loc: "query.workspace_id", Flag: "--workspace-filter", Want: "a workspace's UUID or slug"},
	{Loc: "query.model_id", Flag: "--model", Input: true},
	{Loc: "query.provider_id", Flag: "--provider", Input: true},
	{Loc: "query.tag", Flag: "--tag", Input: true},
}

// checkIDFlags checks the filters that take a UUID before anything is
// sent: a name there is a common slip, and the server's "Input should be
// a valid UUID" does not say which flag.
func (o *ReportOptions) checkIDFlags() error {
	for _, f := range []struct{ flag, value, what string }{
		{"owner", o.Owner, "a user's UUID"},
		{"management-key", o.ManagementKey, "a management key's UUID"},
		{"credential", o.Credential, "a provider credential's UUID (gw credentials list shows them)"},
	} {
		if f.value == "" {
			continue
		}
		if _, err := uuid.Parse(f.value); err != nil {
			return cmdutil.UsageError{Err: fmt.Errorf("--%s must be %s, not %q", f.flag, f.what, f.value)}
		}
	}
	return nil
}

// checkPeriod validates the period and the custom range together. Dates
// imply a custom period; any other explicit period with dates is a
// contradiction worth refusing rather than guessing.
func (o *ReportOptions) checkPeriod(periodSet bool) error {
	if err := cmdutil.OneOf("period", o.Period, reportPeriods...); err != nil {
		return err
	}
	dates := o.StartDate != "" || o.EndDate != ""
	if dates && !periodSet {
		o.Period = "custom"
	}
	switch {
	case dates && o.Period != "custom":
		return cmdutil.UsageError{Err: fmt.Errorf("--start-date and --end-date make a custom range; drop --period %s", o.Period)}
	case o.Period == "custom" && (o.StartDate == "" || o.EndDate == ""):
		return cmdutil.UsageError{Err: errors.New("a custom range needs both --start-date and --end-date")}
	case !dates:
		return nil
	}
	start, err := time.Parse(time.DateOnly, o.StartDate)
	if err != nil {
		return cmdutil.UsageError{Err: fmt.Errorf("--start-date must be YYYY-MM-DD, not %q", o.StartDate)}
	}
	end, err := time.Parse(time.DateOnly, o.EndDate)
	if err != nil {
		return cmdutil.UsageError{Err: fmt.Errorf("--end-date must be YYYY-MM-DD, not %q", o.EndDate)}
	}
	if end.Before(start) {
		return cmdutil.UsageError{Err: fmt.Errorf("--end-date %s is before --start-date %s", o.EndDate, o.StartDate)}
	}
	return nil
}

func (o *ReportOptions) query(workspaceID string) client.UsageQuery {
	return client.UsageQuery{
		WorkspaceID:          workspaceID,
		Period:               o.Period,
		Timezone:             o.Timezone,
		StartDate:            o.StartDate,
		EndDate:              o.EndDate,
		OwnerID:              o.Owner,
		ManagementKeyID:      o.ManagementKey,
		ModelID:              o.Model,
		ProviderID:           o.Provider,
		ProviderCredentialID: o.Credential,
		Tags:                 must(tagFilters(o.Tags)),
	}
}

// must is for values already checked when the flags were read.
func must[T any](v T, _ error) T { return v }

// target is what a report asks and of whom: the client, the scope (the
// context's workspace, or its organization) and the query, a
// --workspace-filter resolved to its id.
func (o *ReportOptions) target(ctx context.Context) (*client.Client, client.Scope, client.UsageQuery, error) {
	c, s, err := o.Client()
	if err != nil {
		return nil, client.Scope{}, client.UsageQuery{}, err
	}
	org, workspace, err := usageScope(s, o.WorkspaceFilter, o.workspaceFlag)
	if err != nil {
		return nil, client.Scope{}, client.UsageQuery{}, err
	}
	q := o.query("")
	if workspace != "" {
		return c, client.WorkspaceScope(org, workspace), q, nil
	}
	if q.WorkspaceID, err = resolveWorkspaceFilter(ctx, c, org, o.WorkspaceFilter); err != nil {
		return nil, client.Scope{}, client.UsageQuery{}, err
	}
	return c, client.OrgScope(org), q, nil
}

func usageReportRun(ctx context.Context, opts *ReportOptions) error {
	c, scope, q, err := opts.target(ctx)
	if err != nil {
		return err
	}
	out := opts.IO
	if opts.By != "" {
		// By tool is the server's breakdown by model of the mcp
		// provider's events (a tool call's model is mcp/<server>/<tool>).
		b := wire.UsageBreakdown{Rows: []wire.UsageBreakdownRow{}}
		if serverBy, sq, ok := tui.ServerBreakdown(opts.By, q); ok {
			if b, err = c.ScopedUsageBreakdown(ctx, scope, serverBy, sq); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(out.ErrOut, "Note: --provider "+q.ProviderID+" leaves no MCP tool call to break down")
		}
		b.By = opts.By
		if opts.Output.Format == cmdutil.OutputTable && out.IsTerminal() {
			fmt.Fprintf(out.Out, "Usage by %s, %s\n\n", strings.ReplaceAll(opts.By, "_", " "), periodLine(b.Period))
		}
		if b.Note != "" {
			fmt.Fprintln(out.ErrOut, "Note: "+b.Note)
		}
		ws := scope.Workspace
		if ws == "" {
			ws = q.WorkspaceID
		}
		return opts.Output.Print(opts.IO, b, func() cmdutil.Table {
			return usageBreakdownTable(b, breakdownLabeler(ctx, cmdutil.NewNameBook(c), scope.Org, ws, opts.By))
		})
	}
	r, err := c.ScopedUsageReport(ctx, scope, q)
	if err != nil {
		return err
	}
	if r.Note != "" {
		fmt.Fprintln(out.ErrOut, "Note: "+r.Note)
	}
	// The period and time zone are not in the rows; on a terminal a title
	// says them. Piped, the rows stay clean for cut and awk.
	if opts.Output.Format == cmdutil.OutputTable && out.IsTerminal() {
		fmt.Fprintf(out.Out, "Usage %s, compared with %s\n\n", periodLine(r.Period),
			tui.DateRange(r.Period.PreviousStartAt, r.Period.PreviousEndAt, r.Period.Timezone))
	}
	if err := opts.Output.Print(opts.IO, r, func() cmdutil.Table { return usageReportTable(r) }); err != nil {
		return err
	}
	if opts.Output.Format == cmdutil.OutputTable {
		printCacheSaving(out, r.Totals.CacheSavingUSD)
	}
	return nil
}

// printCacheSaving says what the response cache saved in the period (its
// hits cost $0, so the cost column does not show it): below the table on a
// terminal, on stderr when piped, so the rows stay clean for cut and awk.
func printCacheSaving(out *cmdutil.IOStreams, saving string) {
	if saving == "" || strings.Trim(saving, "0.") == "" {
		return
	}
	line := "Response cache: " + saving + " USD saved (answers served from the cache, not in the cost above)"
	if out.IsTerminal() {
		fmt.Fprintln(out.Out, "\n"+line)
		return
	}
	fmt.Fprintln(out.ErrOut, "Note: "+line)
}

func periodLine(p wire.UsagePeriod) string {
	tz := p.Timezone
	if tz == "" {
		tz = "UTC"
	}
	return tui.DateRange(p.StartAt, p.EndAt, p.Timezone) + " (" + tz + ")"
}

// usageColumns are the counters' columns. The cache columns are wide:
// with a model's name in front, all seven pass 80 columns.
var usageColumns = []string{"requests", "input", "output", "cache read", "cache write", "cost (usd)"}

var usageWide = []string{"cache read", "cache write"}

// usageCells are the counters for a table: exact integers and the exact
// decimal cost (two decimals at least), so the table sums to the same as
// --json.
func usageCells(c wire.UsageCounters) []string {
	r := usageRecord(c)
	r[len(r)-1] = cmdutil.MoneyCell(c.CostUSD)
	return r
}

// usageRecordColumns and usageRecord are the counters of a CSV export:
// the API's names and values as they are, for spreadsheets and scripts.
var usageRecordColumns = []string{"requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd"}

func usageRecord(c wire.UsageCounters) []string {
	return []string{
		fmt.Sprint(c.Requests), fmt.Sprint(c.InputTokens), fmt.Sprint(c.OutputTokens),
		fmt.Sprint(c.CacheReadTokens), fmt.Sprint(c.CacheWriteTokens), c.CostUSD,
	}
}

// usageReportTable: a row per day, then total, previous (the comparison
// period's totals) and change. Summary rows come last and are named in the
// first column, so a script can take the days with a date match.
func usageReportTable(r wire.UsageReport) cmdutil.Table {
	t := cmdutil.Table{Headers: append([]string{"date"}, usageColumns...), Wide: usageWide}
	for _, d := range r.Daily {
		t.Rows = append(t.Rows, append([]string{d.Date.Format(time.DateOnly)}, usageCells(d.UsageCounters)...))
	}
	cur, prev := r.Totals, r.Comparison
	t.Rows = append(t.Rows,
		append([]string{"total"}, usageCells(cur)...),
		append([]string{"previous"}, usageCells(prev)...),
		[]string{"change",
			tui.ChangeInt(cur.Requests, prev.Requests), tui.ChangeInt(cur.InputTokens, prev.InputTokens),
			tui.ChangeInt(cur.OutputTokens, prev.OutputTokens), tui.ChangeInt(cur.CacheReadTokens, prev.CacheReadTokens),
			tui.ChangeInt(cur.CacheWriteTokens, prev.CacheWriteTokens), tui.ChangeCost(cur.CostUSD, prev.CostUSD)},
	)
	return t
}

// breakdownLabeler names the rows of a breakdown whose keys are ids
// (workspaces, owners, inference keys); models and providers are names
// already. Only the table calls it: json and yaml keep the ids.
func breakdownLabeler(ctx context.Context, b *cmdutil.NameBook, org, workspace, by string) func(string) string {
	switch by {
	case "workspace":
		return func(id string) string { return b.WorkspaceName(ctx, org, id) }
	case "owner":
		return func(id string) string { return b.MemberName(ctx, org, id) }
	case "inference_key":
		return func(id string) string { return b.InferenceKeyName(ctx, org, workspace, id) }
	case tui.ToolDimension:
		return tui.ToolName
	}
	return func(key string) string { return key }
}

func usageBreakdownTable(b wire.UsageBreakdown, label func(string) string) cmdutil.Table {
	by := b.By
	if by == "" {
		by = "key"
	}
	by = strings.ReplaceAll(by, "_", " ")
	t := cmdutil.Table{Headers: append([]string{by}, usageColumns...), Wide: usageWide, Shrink: []string{by},
		Empty: "no usage in this period"}
	for _, r := range b.Rows {
		cell := r.Key
		if cell != "" {
			cell = label(cell)
		}
		if l := tui.RowLabel(r); l != "" {
			cell = l
		}
		t.Rows = append(t.Rows, append([]string{cmdutil.OrDash(cell)}, usageCells(r.UsageCounters)...))
	}
	return t
}
