package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmdDataPlanes builds `gw data-planes`, the operator's view of the
// data planes that report to this control plane. Further subcommands
// (enrollment) join the group here.
func NewCmdDataPlanes(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "data-planes",
		Aliases: []string{"data-plane", "dp"},
		Short:   "Data planes: their version, admitted bundles, spool and heartbeats",
		Args:    cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdDataPlanesList(f, nil), NewCmdDataPlanesGet(f, nil))
	return cmd
}

// DataPlanesOptions configure gw data-planes list and get.
type DataPlanesOptions struct {
	IO     *IOStreams
	Client func() (*client.Client, Settings, error)
	Print  func(format string, data any, table func() Table) error
	Output string
	// ID is the data plane get shows.
	ID string
}

// NewCmdDataPlanesList builds `gw data-planes list`.
func NewCmdDataPlanesList(f *Factory, runF func(context.Context, *DataPlanesOptions) error) *cobra.Command {
	opts := &DataPlanesOptions{IO: f.IO, Client: f.AuthedClient, Print: f.Print}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the data planes with their state",
		Long: `List every data plane that has sent a heartbeat: its id; its status, healthy
when it is enrolled and alive, else why it serves nothing (pending until gw
data-planes enroll approves it, revoked, not enrolled) and stale after a
minute without a heartbeat; whether it is current (enrolled and it admitted
every organization's latest bundle); its version, usage spool depth and last
heartbeat. -o wide adds its enrollment, the bundle version it admitted per
organization and its first heartbeat. Needs data-planes.read;
"current" needs bundles.read too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dataPlanesRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

// NewCmdDataPlanesGet builds `gw data-planes get ID`.
func NewCmdDataPlanesGet(f *Factory, runF func(context.Context, *DataPlanesOptions) error) *cobra.Command {
	opts := &DataPlanesOptions{IO: f.IO, Client: f.AuthedClient, Print: f.Print}
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show one data plane's state, bundle by bundle",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dataPlanesRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	return cmd
}

// DataPlaneView is a data plane as gw data-planes shows it: the heartbeat's
// record and whether its bundles are the latest (nil: not known).
type DataPlaneView struct {
	wire.DataPlaneInstance
	Current *bool `json:"current"`
	// Behind lists the organizations whose latest bundle it has not
	// admitted.
	Behind []string `json:"behind,omitempty"`
}

// dataPlaneViews lists the data planes and compares their bundles with
// the latest ones; latest is nil when they could not be read.
func dataPlaneViews(ctx context.Context, c *client.Client) ([]DataPlaneView, map[string]int64, error) {
	list, err := c.ListDataPlanes(ctx)
	if err != nil {
		return nil, nil, err
	}
	latest := map[string]int64{}
	out := make([]DataPlaneView, len(list))
	for i, d := range list {
		out[i] = DataPlaneView{DataPlaneInstance: d}
		for org, v := range d.LatestBundleVersions {
			latest[org] = max(latest[org], v)
			if d.BundleVersions[org] < v {
				out[i].Behind = append(out[i].Behind, org)
			}
		}
		sort.Strings(out[i].Behind)
		// A data plane that is not enrolled serves nothing (503): it is
		// not current, however few bundles it lacks.
		current := len(out[i].Behind) == 0 && d.Enrollment == "approved"
		out[i].Current = &current
	}
	return out, latest, nil
}

func dataPlanesRun(ctx context.Context, opts *DataPlanesOptions) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	views, _, err := dataPlaneViews(ctx, c)
	if err != nil {
		return err
	}
	// Bundles are keyed by organization id; a person knows the names.
	names := newNameBook(c)
	orgName := func(id string) string { return names.orgName(ctx, id) }
	if opts.ID == "" {
		err := opts.Print(opts.Output, views, func() Table { return dataPlanesTable(views, orgName) })
		if err == nil && opts.Output == OutputTable {
			sayPending(opts.IO, views)
		}
		return err
	}
	i := slices.IndexFunc(views, func(v DataPlaneView) bool { return v.ID == opts.ID })
	if i < 0 {
		return fmt.Errorf("no data plane %q has sent a heartbeat", opts.ID)
	}
	v := views[i]
	return opts.Print(opts.Output, v, func() Table { return dataPlaneTable(v, orgName) })
}

// dataPlanesTable is a data plane per row. The enrollment, the bundles
// and the first heartbeat are wide: the status says whether it serves,
// current whether its bundles are the latest.
func dataPlanesTable(views []DataPlaneView, orgName func(string) string) Table {
	t := Table{Headers: []string{"id", "status", "current", "version", "spool", "last seen", "enrollment", "bundles", "first seen"},
		Wide: []string{"enrollment", "bundles", "first seen"}, Shrink: []string{"version"}}
	for _, v := range views {
		t.Rows = append(t.Rows, []string{v.ID, dataPlaneStatus(v), currentText(v.Current), v.Version,
			strconv.FormatInt(v.SpoolDepth, 10), since(v.LastSeenAt), enrollmentText(v.Enrollment), bundlesText(v.BundleVersions, orgName),
			v.FirstSeenAt.UTC().Format("2006-01-02 15:04")})
	}
	return t
}

// dataPlaneStatus says whether a data plane serves. The API's status is
// its heartbeat alone (healthy, or stale after a minute without one); a
// data plane that is not enrolled serves nothing however alive it is, so
// its enrollment comes first: pending, revoked or not enrolled, then stale
// if it is (issue 26, row 12).
func dataPlaneStatus(v DataPlaneView) string {
	var parts []string
	switch v.Enrollment {
	case "approved":
	case "pending", "revoked":
		parts = append(parts, v.Enrollment)
	default:
		parts = append(parts, "not enrolled")
	}
	if v.Status != "healthy" {
		parts = append(parts, v.Status)
	}
	if len(parts) == 0 {
		return v.Status
	}
	return strings.Join(parts, ", ")
}

// sayPending tells, under the table, how to enroll the data planes that
// wait for it: the table has no room for the command.
func sayPending(ios *IOStreams, views []DataPlaneView) {
	for _, v := range views {
		if v.Enrollment == "pending" {
			fmt.Fprintf(ios.ErrOut, "%s waits to be enrolled and serves nothing until then: gw data-planes enroll %s --org ORG\n", v.ID, v.ID)
		}
	}
}

// enrollmentText says what an enrollment that is not approved means for
// the data plane: it answers 503 until an instance admin enrolls it.
func enrollmentText(e string) string {
	switch e {
	case "pending":
		return "pending (serves nothing: gw data-planes enroll)"
	case "none", "":
		return "none (serves nothing)"
	case "revoked":
		return "revoked (serves nothing)"
	}
	return e
}

// dataPlaneTable shows one data plane down the page, a row per bundle.
func dataPlaneTable(v DataPlaneView, orgName func(string) string) Table {
	t := Table{Headers: []string{"field", "value"}}
	add := func(k, val string) { t.Rows = append(t.Rows, []string{k, val}) }
	add("id", v.ID)
	add("version", v.Version)
	add("status", dataPlaneStatus(v))
	add("heartbeat", v.Status)
	add("enrollment", enrollmentText(v.Enrollment))
	add("current", currentText(v.Current))
	add("spool_depth", strconv.FormatInt(v.SpoolDepth, 10))
	add("first_seen", v.FirstSeenAt.UTC().Format(time.RFC3339))
	add("last_heartbeat", v.LastSeenAt.UTC().Format(time.RFC3339)+" ("+since(v.LastSeenAt)+")")
	orgs := make([]string, 0, len(v.BundleVersions))
	for org := range v.BundleVersions {
		orgs = append(orgs, org)
	}
	sort.Strings(orgs)
	for _, org := range orgs {
		line := "v" + strconv.FormatInt(v.BundleVersions[org], 10)
		if slices.Contains(v.Behind, org) {
			line += " (behind)"
		}
		add("bundle "+orgName(org), line)
	}
	for _, org := range v.Behind {
		if _, ok := v.BundleVersions[org]; !ok {
			add("bundle "+orgName(org), "none (behind)")
		}
	}
	return t
}

func currentText(c *bool) string {
	switch {
	case c == nil:
		return "unknown"
	case *c:
		return "yes"
	}
	return "no"
}

// bundlesText sums a data plane's bundles up in a cell: how many, and
// their organizations' names and versions when few.
func bundlesText(versions map[string]int64, orgName func(string) string) string {
	if len(versions) == 0 {
		return "none"
	}
	if len(versions) > 3 {
		return strconv.Itoa(len(versions)) + " orgs"
	}
	orgs := make([]string, 0, len(versions))
	for org := range versions {
		orgs = append(orgs, org)
	}
	sort.Strings(orgs)
	parts := make([]string, len(orgs))
	for i, org := range orgs {
		parts[i] = orgName(org) + "@v" + strconv.FormatInt(versions[org], 10)
	}
	return strings.Join(parts, ",")
}

// since says how long ago t was, to the second.
func since(t time.Time) string {
	return time.Since(t).Round(time.Second).String() + " ago"
}
