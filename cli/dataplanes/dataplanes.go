// Package dataplanes is `gw data-planes`: remote data planes, their state
// and their enrollment.
package dataplanes

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
)

// NewCmd builds `gw data-planes`, the operator's view of the
// data planes that report to this control plane. Further subcommands
// (enrollment) join the group here.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "data-planes",
		Aliases: []string{"data-plane", "dp"},
		Short:   "Data planes: their version, admitted bundles, spool and heartbeats",
		Args:    cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdGet(f, nil),
		NewCmdEnrollments(f, nil), NewCmdEnroll(f, nil), NewCmdRevoke(f, nil), NewCmdKeygen(f, nil))
	return cmd
}

// Options configure gw data-planes list and get.
type Options struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	// ID is the data plane get shows.
	ID string
}

// NewCmdList builds `gw data-planes list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IO, Client: f.AuthedClient}
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
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dataPlanesRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

// NewCmdGet builds `gw data-planes get ID`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show one data plane's state, bundle by bundle",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dataPlanesRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

func dataPlanesRun(ctx context.Context, opts *Options) error {
	c, _, err := opts.Client()
	if err != nil {
		return err
	}
	views, _, err := cmdutil.DataPlaneViews(ctx, c)
	if err != nil {
		return err
	}
	// Bundles are keyed by organization id; a person knows the names.
	names := cmdutil.NewNameBook(c)
	orgName := func(id string) string { return names.OrgName(ctx, id) }
	if opts.ID == "" {
		err := opts.Output.Print(opts.IO, views, func() cmdutil.Table { return dataPlanesTable(views, orgName) })
		if err == nil && opts.Output.Format == cmdutil.OutputTable {
			sayPending(opts.IO, views)
		}
		return err
	}
	i := slices.IndexFunc(views, func(v cmdutil.DataPlaneView) bool { return v.ID == opts.ID })
	if i < 0 {
		return fmt.Errorf("no data plane %q has sent a heartbeat", opts.ID)
	}
	v := views[i]
	return opts.Output.Print(opts.IO, v, func() cmdutil.Table { return dataPlaneTable(v, orgName) })
}

// dataPlanesTable is a data plane per row. The enrollment, the bundles
// and the first heartbeat are wide: the status says whether it serves,
// current whether its bundles are the latest.
func dataPlanesTable(views []cmdutil.DataPlaneView, orgName func(string) string) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "status", "current", "version", "spool", "last seen", "enrollment", "bundles", "first seen"},
		Wide: []string{"enrollment", "bundles", "first seen"}, Shrink: []string{"version"}}
	for _, v := range views {
		t.Rows = append(t.Rows, []string{v.ID, cmdutil.DataPlaneStatus(v), cmdutil.CurrentText(v.Current), v.Version,
			strconv.FormatInt(v.SpoolDepth, 10), cmdutil.Since(v.LastSeenAt), cmdutil.EnrollmentText(v.Enrollment), bundlesText(v.BundleVersions, orgName),
			v.FirstSeenAt.UTC().Format("2006-01-02 15:04")})
	}
	return t
}

// sayPending tells, under the table, how to enroll the data planes that
// wait for it: the table has no room for the command.
func sayPending(ios *cmdutil.IOStreams, views []cmdutil.DataPlaneView) {
	for _, v := range views {
		if v.Enrollment == "pending" {
			fmt.Fprintf(ios.ErrOut, "%s waits to be enrolled and serves nothing until then: gw data-planes enroll %s --org ORG\n", v.ID, v.ID)
		}
	}
}

// dataPlaneTable shows one data plane down the page, a row per bundle.
func dataPlaneTable(v cmdutil.DataPlaneView, orgName func(string) string) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"field", "value"}}
	add := func(k, val string) { t.Rows = append(t.Rows, []string{k, val}) }
	add("id", v.ID)
	add("version", v.Version)
	add("status", cmdutil.DataPlaneStatus(v))
	add("heartbeat", v.Status)
	add("enrollment", cmdutil.EnrollmentText(v.Enrollment))
	add("current", cmdutil.CurrentText(v.Current))
	add("spool_depth", strconv.FormatInt(v.SpoolDepth, 10))
	add("first_seen", v.FirstSeenAt.UTC().Format(time.RFC3339))
	add("last_heartbeat", v.LastSeenAt.UTC().Format(time.RFC3339)+" ("+cmdutil.Since(v.LastSeenAt)+")")
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
