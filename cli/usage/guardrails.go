package usage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/wire"
)

// NewCmdGuardrails builds `gw usage guardrails`: what each guardrail did
// per stage over a report's period (issue 32).
func NewCmdGuardrails(f *cmdutil.Factory, runF func(context.Context, *ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "guardrails [--period P | --start-date D --end-date D] [filters] [-o table|wide|json|yaml]",
		Short: "Count each guardrail's blocks, redactions, flags, errors and skips per stage",
		Long: `Print, for the report's period, one row per guardrail and stage: how many
requests it passed, blocked, redacted, flagged, errored on (its webhook
failed: fail_closed blocked them, fail_open let them pass) and skipped (a
part it could not inspect), most blocks first. -o wide adds the guardrail's
id and the detectors that matched, with their counts. Takes the filters of
gw usage report (usage.read).

` + usageWorkspaceHelp,
		Example: `  gw usage guardrails
  gw usage guardrails --period 7d --workspace search
  gw usage guardrails --start-date 2026-03-01 --end-date 2026-03-31 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			if err := opts.Output.Check(); err != nil {
				return err
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
			return cmdutil.WithFlags(usageGuardrailsRun(cmd.Context(), opts), usageQueryFields...)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	opts.addReportFlags(cmd.Flags())
	return cmd
}

func usageGuardrailsRun(ctx context.Context, opts *ReportOptions) error {
	c, scope, q, err := opts.target(ctx)
	if err != nil {
		return err
	}
	r, err := c.GuardrailReport(ctx, scope, q)
	if err != nil {
		return err
	}
	if opts.Output.Format == cmdutil.OutputTable && opts.IO.IsTerminal() {
		fmt.Fprintf(opts.IO.Out, "Guardrails, %s\n\n", periodLine(r.Period))
	}
	return opts.Output.Print(opts.IO, r, func() cmdutil.Table { return GuardrailReportTable(r) })
}

// GuardrailReportTable is a row per guardrail and stage; a deleted
// guardrail's name says so.
func GuardrailReportTable(r wire.GuardrailReport) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"guardrail", "stage", "requests", "blocked", "redacted", "flagged", "errored", "skipped", "passed", "id", "detectors"},
		Wide: []string{"id", "detectors"}, Shrink: []string{"guardrail", "detectors"}, Empty: "no guardrail applied to a request in this period"}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, row := range r.Rows {
		name := row.Name
		if row.Deleted {
			name += " (deleted)"
		}
		t.Rows = append(t.Rows, []string{name, row.Stage, n(row.Requests), n(row.Blocked), n(row.Redacted), n(row.Flagged),
			n(row.Errored), n(row.Skipped), n(row.Passed), row.GuardrailID, DetectorCounts(row.Detectors)})
	}
	return t
}

// DetectorCounts lists detectors with their counts, most first:
// "secrets 37, pii 2"; "-" for none.
func DetectorCounts(d map[string]int64) string {
	names := make([]string, 0, len(d))
	for k := range d {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(d[b], d[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " " + strconv.FormatInt(d[k], 10)
	}
	return cmdutil.OrDash(strings.Join(parts, ", "))
}
