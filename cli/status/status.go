// Package status is `gw status`: the server, its database, bundles and data
// planes at a glance.
package status

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// Options configure gw status.
type Options struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
}

// NewCmd builds `gw status`.
func NewCmd(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Tell at a glance whether the server, its database, bundles and data planes are healthy",
		Long: `Check the server of the current context: alive (/healthz), ready with its
database reachable (/readyz), the organizations' bundles compiled, and every
data plane that reports to it alive (a heartbeat within the last minute) and
current (the latest bundles admitted), and, for the organization of the
context, each workspace whose payload archive's bucket did not answer the
control plane at its last check. Each check says ok, warn, fail or unknown
(the key may not read that part). Exit status 1 when a check fails; a
warning does not fail.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return statusRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

// Status is gw status's answer.
type Status struct {
	Server     string                  `json:"server"`
	Healthy    bool                    `json:"healthy"`
	Checks     []StatusCheck           `json:"checks"`
	DataPlanes []cmdutil.DataPlaneView `json:"data_planes"`
}

// StatusCheck is one line of gw status.
type StatusCheck struct {
	Name   string `json:"name"`
	State  string `json:"state"` // ok, warn (shown, not failing), fail, unknown
	Detail string `json:"detail"`
}

func statusRun(ctx context.Context, opts *Options) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	st := &Status{Server: s.Server, Healthy: true, DataPlanes: []cmdutil.DataPlaneView{}}
	st.probe(ctx, c)
	views, latest, err := cmdutil.DataPlaneViews(ctx, c)
	switch {
	case latest == nil && err == nil:
		st.add("bundles", "unknown", "this key may not read bundles (bundles.read)")
	case latest != nil:
		st.add("bundles", "ok", strconv.Itoa(len(latest))+" organizations compiled")
	}
	if err != nil {
		st.dataPlanesUnknown(err)
	} else {
		st.DataPlanes = views
		st.dataPlanes(views)
	}
	if s.Org != "" {
		wss, err := c.ListWorkspaces(ctx, s.Org)
		if err != nil {
			st.add("archive", "unknown", "the workspaces could not be listed: "+err.Error())
		} else {
			st.archives(wss)
		}
	}
	if err := opts.Output.Print(opts.IO, *st, func() cmdutil.Table { return statusTable(*st) }); err != nil {
		return err
	}
	if !st.Healthy {
		return errors.New("gw status: a check failed")
	}
	return nil
}

// add records a check; one that fails makes the status unhealthy.
func (st *Status) add(name, state, detail string) {
	st.Checks = append(st.Checks, StatusCheck{Name: name, State: state, Detail: detail})
	if state == "fail" {
		st.Healthy = false
	}
}

// probe checks the server's liveness and readiness (its database), and the
// upstream targets /readyz reports.
func (st *Status) probe(ctx context.Context, c *client.Client) {
	if code, _, err := c.Probe(ctx, "/healthz"); err != nil {
		st.add("server", "fail", err.Error())
	} else if code != 200 {
		st.add("server", "fail", "/healthz answered "+strconv.Itoa(code))
	} else {
		st.add("server", "ok", "alive")
	}
	code, body, err := c.Probe(ctx, "/readyz")
	switch {
	case err != nil:
		st.add("database", "fail", err.Error())
	case code != 200:
		st.add("database", "fail", "/readyz answered "+strconv.Itoa(code)+": "+strings.TrimSpace(body))
	default:
		st.add("database", "ok", "reachable (the server is ready)")
		state, detail := upstreamTargets(body)
		st.add("upstream targets", state, detail)
	}
}

// dataPlanesUnknown says why the data planes could not be listed. Out of
// scope (they are listed at instance scope) is not a missing permission:
// it says which it is.
func (st *Status) dataPlanesUnknown(err error) {
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 403 {
		st.add("data planes", "fail", err.Error())
		return
	}
	detail := "this key may not list data planes (data-planes.read)"
	if strings.HasPrefix(apiErr.Detail, "out of scope") {
		detail = "data planes are listed at instance scope: " + apiErr.Detail
	}
	st.add("data planes", "unknown", detail)
}

// dataPlanes checks that every remote data plane is healthy, enrolled and
// current on its bundles.
func (st *Status) dataPlanes(views []cmdutil.DataPlaneView) {
	stale, behind, unenrolled := 0, 0, 0
	for _, v := range views {
		if v.Status != "healthy" {
			stale++
		}
		switch {
		case v.Enrollment != "approved":
			unenrolled++
		case v.Current != nil && !*v.Current:
			behind++
		}
	}
	switch {
	case len(views) == 0:
		st.add("data planes", "ok", "none remote (role all serves inference in process)")
	case stale > 0 || behind > 0 || unenrolled > 0:
		st.add("data planes", "fail", strconv.Itoa(len(views))+" reporting, "+strconv.Itoa(stale)+" stale, "+strconv.Itoa(behind)+
			" behind on bundles, "+strconv.Itoa(unenrolled)+" not enrolled (gw data-planes enrollments)")
	default:
		st.add("data planes", "ok", strconv.Itoa(len(views))+" reporting, all healthy and current")
	}
}

// archives adds a line per workspace whose payload archive's bucket did
// not answer the control plane at its last check (when the setting was
// saved, or at the hourly retention sweep), or one line saying they all
// did. It warns rather than fails: the data planes upload on their own
// and may reach a bucket the control plane cannot; until the bucket
// answers them, payloads wait in their spools.
func (st *Status) archives(wss []wire.Workspace) {
	checked, failing := 0, 0
	for _, w := range wss {
		c := w.ArchiveCheck
		if w.Archive == nil || !w.Archive.Enabled || c == nil {
			continue
		}
		checked++
		if c.OK {
			continue
		}
		failing++
		when := "when the setting was saved"
		if c.By == "sweep" {
			when = "at the hourly sweep"
		}
		st.add("archive "+w.Slug, "warn", "bucket "+w.Archive.Destination.Bucket+" could not be reached "+when+" ("+
			cmdutil.Since(c.CheckedAt)+"): "+c.Error)
	}
	if checked > 0 && failing == 0 {
		st.add("archive", "ok", strconv.Itoa(checked)+" workspace archives, every bucket reachable at its last check")
	}
}

func statusTable(st Status) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"check", "state", "detail"}}
	t.Rows = append(t.Rows, []string{"server", "", st.Server})
	for _, c := range st.Checks {
		t.Rows = append(t.Rows, []string{c.Name, c.State, c.Detail})
	}
	for _, v := range st.DataPlanes {
		t.Rows = append(t.Rows, []string{"data plane " + v.ID, cmdutil.DataPlaneStatus(v), "enrollment: " + cmdutil.EnrollmentText(v.Enrollment) + ", current: " + cmdutil.CurrentText(v.Current) + ", spool " +
			strconv.FormatInt(v.SpoolDepth, 10) + ", last heartbeat " + cmdutil.Since(v.LastSeenAt)})
	}
	return t
}

// upstreamTargets reads /readyz's count of the upstream targets routing
// holds requests back from. Cooling down after a 429 is the upstream
// asking for patience; an open circuit is an upstream that keeps failing,
// which an operator should look at.
func upstreamTargets(readyz string) (string, string) {
	var body struct {
		Targets *map[string]int `json:"upstream_targets"`
	}
	if json.Unmarshal([]byte(readyz), &body) != nil || body.Targets == nil {
		return "unknown", "no data plane in this server's process"
	}
	t := *body.Targets
	if t["cooling_down"]+t["circuit_open"]+t["half_open"] == 0 {
		return "ok", "all healthy"
	}
	state := "ok"
	if t["circuit_open"] > 0 {
		state = "fail"
	}
	return state, strconv.Itoa(t["cooling_down"]) + " cooling down after 429, " + strconv.Itoa(t["circuit_open"]) + " circuit open, " +
		strconv.Itoa(t["half_open"]) + " half open (gw_upstream_target_state)"
}
