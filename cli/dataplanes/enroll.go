package dataplanes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

func enrollmentTable(es ...wire.DataPlaneEnrollment) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"data plane", "status", "fingerprint", "organizations", "platform credentials", "requested"},
		Empty: "no data plane has asked to be enrolled"}
	for _, e := range es {
		platform := "no"
		if e.PlatformCredentials {
			platform = "yes"
		}
		t.Rows = append(t.Rows, []string{e.DataPlaneID, e.Status, e.Fingerprint, enrollmentOrgs(e), platform, cmdutil.TimeCell(&e.RequestedAt)})
	}
	return t
}

func enrollmentOrgs(e wire.DataPlaneEnrollment) string {
	slugs := make([]string, len(e.Organizations))
	for i, o := range e.Organizations {
		slugs[i] = o.Slug
	}
	if len(slugs) == 0 {
		return "-"
	}
	return strings.Join(slugs, ",")
}

// EnrollmentsOptions configure gw data-planes enrollments.
type EnrollmentsOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
}

// NewCmdEnrollments builds `gw data-planes enrollments`.
func NewCmdEnrollments(f *cmdutil.Factory, runF func(context.Context, *EnrollmentsOptions) error) *cobra.Command {
	opts := &EnrollmentsOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "enrollments",
		Short: "List data planes' enrollments: pending requests, approved and revoked data planes",
		Long: `List every data plane that asked to be enrolled, with its key's fingerprint
(compare it with the one the data plane logs at start) and the organizations
it receives bundles for.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			c, _, err := opts.Client()
			if err != nil {
				return err
			}
			es, err := c.ListEnrollments(cmd.Context())
			if err != nil {
				return err
			}
			return opts.Output.Print(opts.IO, es, func() cmdutil.Table { return enrollmentTable(es...) })
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

// EnrollOptions configure gw data-planes enroll.
type EnrollOptions struct {
	IO          *cmdutil.IOStreams
	Client      func() (*client.Client, cmdutil.Settings, error)
	ID          string
	Orgs        []string
	Fingerprint string
	// PlatformCredentials, when set, says whether the data plane receives
	// platform-scope credentials; nil keeps the enrollment's setting.
	PlatformCredentials *bool
	Output              cmdutil.Output
	// Wait is how long to wait for the data plane to ask to be enrolled
	// (it asks when it starts); 0 fails at once when it has not.
	Wait time.Duration
	// Sleep waits between tries; tests replace it.
	Sleep func(context.Context, time.Duration) error
}

// enrollRetryEvery is how often --wait asks again.
const enrollRetryEvery = 2 * time.Second

// NewCmdEnroll builds `gw data-planes enroll`.
func NewCmdEnroll(f *cmdutil.Factory, runF func(context.Context, *EnrollOptions) error) *cobra.Command {
	opts := &EnrollOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "enroll <data-plane-id> --org ORG [--org ORG...]",
		Short: "Enroll a data plane for chosen organizations (their provider secrets are sealed to its key)",
		Long: `Approve a data plane's enrollment for exactly the organizations given
(replacing any earlier set). Its next bundle poll carries those
organizations' bundles, each provider secret sealed to the data plane's own
public key; it receives nothing of any other organization.

The data plane asks to be enrolled when it starts, and logs its key's
fingerprint. Pass that fingerprint with --fingerprint to approve only the
key you checked. Needs provider-credentials.manage at instance scope.

Platform-scope (instance-wide) provider credentials serve every
organization; a data plane receives them only with --platform-credentials
(a new enrollment starts without them; --platform-credentials=false takes
them away again). Without the flag the enrollment keeps its setting.

--wait lets a deployment enroll a data plane it has just started: gw waits
that long for the data plane's request to arrive (deploy/compose.yaml).`,
		Example: `  gw data-planes enroll dp-eu-1 --org acme --fingerprint 3f2a...
  gw data-planes enroll dp-eu-1 --org acme --platform-credentials
  gw data-planes enroll dp-1 --org acme --wait 2m    # right after starting it`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if cmd.Flags().Changed("platform-credentials") {
				v, _ := cmd.Flags().GetBool("platform-credentials")
				opts.PlatformCredentials = &v
			}
			if len(opts.Orgs) == 0 {
				return cmdutil.UsageError{Err: errors.New("name at least one organization with --org")}
			}
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			c, _, err := opts.Client()
			if err != nil {
				return err
			}
			req := wire.DataPlaneEnrollmentApprove{Organizations: opts.Orgs, PlatformCredentials: opts.PlatformCredentials}
			if opts.Fingerprint != "" {
				req.Fingerprint = &opts.Fingerprint
			}
			e, err := approveWhenAsked(cmd.Context(), c, opts, req)
			if err != nil {
				return err
			}
			return opts.Output.Print(opts.IO, e, func() cmdutil.Table { return enrollmentTable(e) })
		},
	}
	cmd.Flags().StringSliceVar(&opts.Orgs, "org", nil, "an organization (slug or UUID) the data plane serves; repeat or separate with commas")
	cmd.Flags().StringVar(&opts.Fingerprint, "fingerprint", "", "the data plane's key fingerprint, as it logged it: refuse any other key")
	cmd.Flags().Bool("platform-credentials", false, "send the data plane the platform-scope (instance-wide) credentials too; =false takes them away (default: keep the enrollment's setting, which starts as false)")
	cmd.Flags().DurationVar(&opts.Wait, "wait", 0, "wait up to this long for the data plane to ask to be enrolled, e.g. 2m")
	cmdutil.AddOutput(cmd, &opts.Output)
	opts.Sleep = cmdutil.SleepCtx
	return cmd
}

// approveWhenAsked approves the enrollment, trying again every few
// seconds while the data plane has not asked yet (404) and --wait allows.
// Anything else (the control plane unreachable while it starts included)
// is retried too until the wait is up, then reported.
func approveWhenAsked(ctx context.Context, c *client.Client, opts *EnrollOptions, req wire.DataPlaneEnrollmentApprove) (wire.DataPlaneEnrollment, error) {
	deadline := time.Now().Add(opts.Wait)
	said := false
	for {
		e, err := c.ApproveEnrollment(ctx, opts.ID, req)
		var unreachable *client.UnreachableError
		retry := client.IsStatus(err, http.StatusNotFound) || errors.As(err, &unreachable)
		if err == nil || !retry || time.Now().Add(enrollRetryEvery).After(deadline) {
			if client.IsStatus(err, http.StatusNotFound) {
				return e, notAsked(opts, err)
			}
			return e, err
		}
		if !said {
			fmt.Fprintf(opts.IO.ErrOut, "Waiting up to %s for data plane %q to ask to be enrolled…\n", opts.Wait, opts.ID)
			said = true
		}
		if err := opts.Sleep(ctx, enrollRetryEvery); err != nil {
			return e, err
		}
	}
}

// notAsked explains a 404: the data plane never asked. --wait is
// suggested only to one who did not pass it (issue 26, row 12); one who
// did waited in vain, and the cause is elsewhere.
func notAsked(opts *EnrollOptions, err error) error {
	if opts.Wait > 0 {
		return fmt.Errorf("data plane %q did not ask to be enrolled within --wait %s: is it running, with --data-plane-id %s and a key "+
			"that holds data-planes.heartbeat, against this control plane? Its log says whether it asked: %w", opts.ID, opts.Wait, opts.ID, err)
	}
	return fmt.Errorf("data plane %q has not asked to be enrolled: start it (gw serve --role data-plane --data-plane-id %s), or pass --wait 2m "+
		"to wait for it to ask: %w", opts.ID, opts.ID, err)
}

// RevokeOptions configure gw data-planes revoke.
type RevokeOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	ID     string
	Yes    bool
	Output cmdutil.Output
}

// NewCmdRevoke builds `gw data-planes revoke`.
func NewCmdRevoke(f *cmdutil.Factory, runF func(context.Context, *RevokeOptions) error) *cobra.Command {
	opts := &RevokeOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "revoke <data-plane-id>",
		Short: "Revoke a data plane's enrollment: its next poll carries no bundle and it stops serving",
		Long: `Revoke a data plane's enrollment. Its next bundle poll carries no bundle: it
drops every organization it served (and its cache of them) and refuses
their keys. Secrets it already received stay on its host: rotate the provider
credentials of its organizations if the host is not trusted any more.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if err := cmdutil.Confirm(opts.IO, "Revoke the enrollment of data plane "+opts.ID+"?", opts.Yes); err != nil {
				return err
			}
			c, _, err := opts.Client()
			if err != nil {
				return err
			}
			e, err := c.RevokeEnrollment(cmd.Context(), opts.ID)
			if err != nil {
				return err
			}
			return opts.Output.Print(opts.IO, e, func() cmdutil.Table { return enrollmentTable(e) })
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}
