// Package activity is `gw activity`: the audit log.
package activity

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw activity`, the audit log.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "activity", Aliases: []string{"audit"}, Short: "Read the audit log: who changed what, when"}
	cmd.AddCommand(NewCmdList(f, nil))
	return cmd
}

func activityTable(evs ...wire.AuditEvent) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"time", "action", "actor", "target", "scope", "request_id"}}
	for _, e := range evs {
		actor := e.Actor.Type
		if e.Actor.ID != nil {
			actor += ":" + e.Actor.ID.String()
		}
		scope := e.Scope.Level
		switch {
		case e.Scope.WorkspaceID != nil:
			scope += ":" + e.Scope.WorkspaceID.String()
		case e.Scope.OrgID != nil:
			scope += ":" + e.Scope.OrgID.String()
		}
		t.Rows = append(t.Rows, []string{cmdutil.TimeCell(&e.CreatedAt), e.Action, actor, e.Target.Type + ":" + e.Target.ID, scope, cmdutil.OrDash(e.RequestID)})
	}
	return t
}

// ListOptions configure gw activity list.
type ListOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Scope  string
	Paging cmdutil.Paging
}

// NewCmdList builds `gw activity list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "list [--scope instance|org] [--limit N] [--all]",
		Short: "List audit events, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.OneOf("scope", opts.Scope, "instance", "org"); err != nil {
				return err
			}
			if err := opts.Paging.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Scope, "scope", "org", "instance (everything) or org (the organization's events)")
	cmdutil.AddPagingFlags(cmd, &opts.Paging)
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	scope := client.InstanceScope()
	if opts.Scope == "org" {
		org, err := s.RequireOrg()
		if err != nil {
			return err
		}
		scope = client.OrgScope(org)
	}
	evs, err := cmdutil.FollowPages(ctx, opts.Paging, opts.IO.ErrOut, func(ctx context.Context, limit int, cursor string) (wire.Page[wire.AuditEvent], error) {
		return c.ListActivity(ctx, scope, limit, cursor)
	})
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, evs, func() cmdutil.Table { return activityTable(evs...) })
}
