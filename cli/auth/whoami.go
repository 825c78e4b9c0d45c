package auth

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// WhoamiOptions configure gw whoami.
type WhoamiOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
}

// NewCmdWhoami builds `gw whoami`.
func NewCmdWhoami(f *cmdutil.Factory, runF func(context.Context, *WhoamiOptions) error) *cobra.Command {
	opts := &WhoamiOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show who the current credential is, its scope, permissions and expiry",
		Long: `Ask the server who the effective credential (the context's key, or GW_TOKEN)
belongs to: the principal, the key, the scope it covers, its permissions and
when it expires. Exit status 4 when not logged in or the key is no longer
accepted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return whoamiRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

func whoamiRun(ctx context.Context, opts *WhoamiOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	me, err := c.Me(ctx)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, me, func() cmdutil.Table { return whoamiTable(ctx, cmdutil.NewNameBook(c), me, s) })
}

// whoamiTable shows the answer as field/value rows: one record reads
// better down the page than across it. Organizations and workspaces are
// named; --output json keeps their ids.
func whoamiTable(ctx context.Context, names *cmdutil.NameBook, me wire.Me, s cmdutil.Settings) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"field", "value"}}
	add := func(k, v string) { t.Rows = append(t.Rows, []string{k, v}) }
	principal := me.User.Email
	if me.User.Name != "" && me.User.Name != me.User.Email {
		principal += " (" + me.User.Name + ")"
	}
	if me.User.ServiceAccount {
		principal += " [service account]"
	}
	add("principal", principal)
	add("user_id", me.User.ID.String())
	add("instance_role", me.User.InstanceRole)
	if k := me.Key; k != nil {
		add("credential", "management key "+k.Prefix+"… ("+k.Label+")")
		add("key_id", k.ID.String())
		add("scope", names.ScopeLine(ctx, k.Scope))
		add("permissions", strings.Join(k.Permissions, ","))
		expires := "never"
		if k.ExpiresAt != nil {
			expires = k.ExpiresAt.UTC().Format(time.RFC3339)
		}
		add("expires", expires)
		add("status", k.Status)
	} else {
		add("credential", me.Credential)
	}
	for _, m := range me.Memberships {
		add("membership", names.OrgName(ctx, m.OrgID.String())+" "+m.Role+" ("+m.Status+")")
	}
	add("server", s.Server)
	if s.Context != "" {
		add("context", s.Context)
	}
	return t
}
