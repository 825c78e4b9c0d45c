package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmdActivity builds `gw activity`, the audit log.
func NewCmdActivity(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "activity", Aliases: []string{"audit"}, Short: "Read the audit log: who changed what, when"}
	cmd.AddCommand(NewCmdActivityList(f, nil))
	return cmd
}

func activityTable(evs ...wire.AuditEvent) Table {
	t := Table{Headers: []string{"time", "action", "actor", "target", "scope", "request_id"}}
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
		t.Rows = append(t.Rows, []string{timeCell(&e.CreatedAt), e.Action, actor, e.Target.Type + ":" + e.Target.ID, scope, orDash(e.RequestID)})
	}
	return t
}

// ActivityListOptions configure gw activity list.
type ActivityListOptions struct {
	f      *Factory
	Output string
	Scope  string
	Paging resourcePaging
}

// NewCmdActivityList builds `gw activity list`.
func NewCmdActivityList(f *Factory, runF func(context.Context, *ActivityListOptions) error) *cobra.Command {
	opts := &ActivityListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list [--scope instance|org] [--limit N] [--all]",
		Short: "List audit events, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := oneOf("scope", opts.Scope, "instance", "org"); err != nil {
				return err
			}
			if err := opts.Paging.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return activityListRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Scope, "scope", "org", "instance (everything) or org (the organization's events)")
	addPagingFlags(cmd, &opts.Paging)
	return cmd
}

func activityListRun(ctx context.Context, opts *ActivityListOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	evs, err := followPages(ctx, opts.Paging, opts.f.IO.ErrOut, func(ctx context.Context, limit int, cursor string) (wire.Page[wire.AuditEvent], error) {
		return c.ListActivity(ctx, scope, limit, cursor)
	})
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, evs, func() Table { return activityTable(evs...) })
}
