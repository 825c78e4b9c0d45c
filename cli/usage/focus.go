package usage

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/wire"
)

// checkFocus checks the flags of `gw usage export --format focus`: the
// organization's FOCUS export of whole UTC days, without the report's
// filters, breakdowns or time zones (docs/focus.md).
func (o *ExportOptions) checkFocus(changed func(string) bool) error {
	if !slices.Contains(wire.FocusVersions, o.FocusVersion) {
		return cmdutil.UsageError{Err: fmt.Errorf("--focus-version must be 1.3 or 1.4, not %q", o.FocusVersion)}
	}
	if o.StartDate == "" || o.EndDate == "" {
		return cmdutil.UsageError{Err: errors.New("--format focus needs --start-date and --end-date (UTC days, inclusive)")}
	}
	for _, name := range []string{"period", "timezone", "by", "tag", "model", "provider", "owner", "management-key", "credential", "workspace", "workspace-filter"} {
		if changed(name) {
			return cmdutil.UsageError{Err: fmt.Errorf("--format focus exports the whole organization's UTC days: --%s does not apply", name)}
		}
	}
	return nil
}

// focusExportRun writes the FOCUS export's CSV as the server wrote it.
func focusExportRun(ctx context.Context, opts *ExportOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	body, err := c.FocusExportCSV(ctx, org, opts.StartDate, opts.EndDate, opts.FocusVersion)
	if err != nil {
		return err
	}
	_, err = opts.IO.Out.Write(body)
	return err
}
