package usage

import (
	"context"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// ExportOptions configure gw usage export: the report's period and
// filters, a breakdown dimension, and the format.
type ExportOptions struct {
	ReportOptions
	Format string
	// FocusVersion is the FOCUS version of --format focus.
	FocusVersion string
}

// NewCmdExport builds `gw usage export`, usage for finance: one CSV
// row per day (and per value of a dimension), with exact decimal costs.
func NewCmdExport(f *cmdutil.Factory, runF func(context.Context, *ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{ReportOptions: ReportOptions{IO: f.IO, Client: f.AuthedClient}}
	cmd := &cobra.Command{
		Use:   "export --format csv|focus [--period P | --start-date D --end-date D] [filters] [--by DIMENSION]",
		Short: "Export usage as CSV: one row per day, or per day and value of a dimension (a tag's too)",
		Long: `Export the report's period as CSV on standard output, for a spreadsheet or
finance: one row per local day (--timezone cuts the days), or with --by one
row per day and value of the dimension that day (model, provider, owner,
inference_key, workspace or tag:KEY). Costs are the API's exact decimals in
USD, never rounded; token counts are exact integers. In a breakdown by tag
the requests without the tag have an empty value; those past the tag bound
(docs/metering.md) are marked in the over_tag_limit column. Takes the
report's filters (--tag KEY=VALUE, --model, …) and scopes (--workspace,
--workspace-filter).

--format focus writes the organization's FOCUS cost rows instead (FinOps
Open Cost and Usage Specification, --focus-version 1.3 or 1.4): one row per
UTC day, workspace, model, price class and tag set, for --start-date to
--end-date; the costs add up to the usage report's exactly (docs/focus.md).`,
		Example: `  gw usage export --format csv --by tag:team --period month_to_date > team-costs.csv
  gw usage export --format csv --start-date 2026-03-01 --end-date 2026-03-31 --by model
  gw usage export --format csv --by tag:feature --tag team=search --timezone Europe/Paris
  gw usage export --format focus --focus-version 1.4 --start-date 2026-03-01 --end-date 2026-03-31 > focus.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Format == "focus" {
				if err := opts.checkFocus(cmd.Flags().Changed); err != nil {
					return err
				}
				if runF != nil {
					return runF(cmd.Context(), opts)
				}
				return focusExportRun(cmd.Context(), opts)
			}
			if opts.Format != "csv" {
				return cmdutil.UsageError{Err: fmt.Errorf("--format must be csv or focus, not %q", opts.Format)}
			}
			if opts.By != "" && !tui.IsDimension(opts.By) {
				return cmdutil.UsageError{Err: fmt.Errorf("--by must be one of %s or tag:KEY, not %q", strings.Join(tui.Dimensions, ", "), opts.By)}
			}
			if _, err := tagFilters(opts.Tags); err != nil {
				return err
			}
			if err := opts.checkPeriod(cmd.Flags().Changed("period")); err != nil {
				return err
			}
			if err := opts.checkIDFlags(); err != nil {
				return err
			}
			opts.workspaceFlag = cmd.Flags().Changed("workspace")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return cmdutil.WithFlags(usageExportRun(cmd.Context(), opts), usageQueryFields...)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Format, "format", "csv", "output format: csv, or focus (FOCUS cost rows, docs/focus.md)")
	fl.StringVar(&opts.FocusVersion, "focus-version", "1.3", "FOCUS version of --format focus: 1.3 or 1.4")
	opts.addReportFlags(fl)
	fl.StringVar(&opts.By, "by", "", "a row per day and value of model, provider, owner, inference_key, workspace, tool or tag:KEY")
	return cmd
}

func usageExportRun(ctx context.Context, opts *ExportOptions) error {
	c, scope, q, err := opts.target(ctx)
	if err != nil {
		return err
	}
	// The report says the period's local days; each is then broken down
	// on its own, so every row is one day's, exactly.
	r, err := c.ScopedUsageReport(ctx, scope, q)
	if err != nil {
		return err
	}
	x := &usageExport{w: csv.NewWriter(opts.IO.Out), by: opts.By, byTag: strings.HasPrefix(opts.By, tui.TagPrefix), notes: map[string]bool{}}
	x.note(r.Note)
	if err := x.header(); err != nil {
		return err
	}
	for i, d := range r.Daily {
		if opts.By == "" {
			if err := x.w.Write(append([]string{d.Date.Format(time.DateOnly)}, usageRecord(d.UsageCounters)...)); err != nil {
				return err
			}
			continue
		}
		end := r.Period.EndAt
		if i+1 < len(r.Daily) {
			end = r.Daily[i+1].Date
		}
		if err := x.day(ctx, c, scope, q, d.Date, end); err != nil {
			return err
		}
	}
	x.w.Flush()
	for n := range x.notes {
		fmt.Fprintln(opts.IO.ErrOut, "Note: "+n)
	}
	return x.w.Error()
}

// usageExport writes the CSV: a row per day, or per day and value of the
// breakdown, with the notes the answers carried.
type usageExport struct {
	w     *csv.Writer
	by    string
	byTag bool
	notes map[string]bool
}

func (x *usageExport) note(n string) {
	if n != "" {
		x.notes[n] = true
	}
}

func (x *usageExport) header() error {
	header := []string{"date"}
	if x.by != "" {
		header = append(header, x.by)
	}
	header = append(header, usageRecordColumns...)
	if x.byTag {
		header = append(header, "over_tag_limit")
	}
	return x.w.Write(header)
}

// day writes one day's breakdown, asked for as a custom period from the
// day's start to the next's.
func (x *usageExport) day(ctx context.Context, c *client.Client, scope client.Scope, q client.UsageQuery, start, end time.Time) error {
	date := start.Format(time.DateOnly)
	q.Period, q.StartDate, q.EndDate = "custom", "", ""
	q.StartAt, q.EndAt = start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano)
	// By tool is the breakdown by model of the mcp provider (the key
	// stays the tool's model id, mcp/<server>/<tool>, as in the events).
	serverBy, sq, ok := tui.ServerBreakdown(x.by, q)
	if !ok {
		return nil
	}
	b, err := c.ScopedUsageBreakdown(ctx, scope, serverBy, sq)
	if err != nil {
		return fmt.Errorf("breakdown of %s: %w", date, err)
	}
	x.note(b.Note)
	for _, row := range b.Rows {
		rec := append([]string{date, exportKey(row)}, usageRecord(row.UsageCounters)...)
		if x.byTag {
			rec = append(rec, strconv.FormatBool(row.OverTagLimit))
		}
		if err := x.w.Write(rec); err != nil {
			return err
		}
	}
	return nil
}

// exportKey is a row's value as the CSV has it: empty for none.
func exportKey(r wire.UsageBreakdownRow) string {
	if r.NoValue || r.OverTagLimit {
		return ""
	}
	return r.Key
}
