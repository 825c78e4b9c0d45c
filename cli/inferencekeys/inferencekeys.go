// Package inferencekeys is `gw inference-keys`: the keys applications send to /inf/v1.
package inferencekeys

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw inference-keys`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "inference-keys",
		Aliases: []string{"ik"},
		Short:   "Manage a workspace's inference keys (sk-gw-…), which call models on the data plane",
	}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdGet(f, nil),
		NewCmdCreate(f, nil),
		NewCmdUpdate(f, nil),
		NewCmdRevoke(f, nil),
	)
	return cmd
}

// inferenceKeyTable is a key per row, its owner named (owner names the
// user id by email where the key may list members). The id and the
// creation are wide: the name and prefix say which key it is; piped, the
// id stays the first column.
func inferenceKeyTable(owner func(id string) string, ks ...wire.InferenceKey) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "name", "prefix", "status", "owner", "tags", "expires", "created"},
		Wide: []string{"id", "created"}, Shrink: []string{"tags", "name", "owner"}}
	for _, k := range ks {
		t.Rows = append(t.Rows, []string{k.ID.String(), k.Name, k.Prefix, k.Status, owner(k.UserID.String()), tagsCell(k.Tags),
			cmdutil.DateCell(k.ExpiresAt), cmdutil.DateCell(&k.CreatedAt)})
	}
	return t
}

func inferenceKeyDetail(k wire.InferenceKey) cmdutil.Table {
	return cmdutil.DetailTable("id", k.ID.String(), "prefix", k.Prefix, "name", k.Name, "status", k.Status,
		"org_id", k.OrgID.String(), "workspace_id", k.WorkspaceID.String(), "user_id", k.UserID.String(),
		"expires_at", cmdutil.TimeCell(k.ExpiresAt), "revoked_at", cmdutil.TimeCell(k.RevokedAt), "rate_limits", cmdutil.RateLimitsCell(k.RateLimits),
		"tags", tagsCell(k.Tags), "created_at", cmdutil.TimeCell(&k.CreatedAt), "updated_at", cmdutil.TimeCell(&k.UpdatedAt))
}

// ListOptions configure gw inference-keys list.
type ListOptions = cmdutil.ListOptions

// NewCmdList builds `gw inference-keys list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	return cmdutil.NewListCmd(f, "List the workspace's inference keys (metadata only)", runF, listRun)
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	ks, err := c.ListInferenceKeys(ctx, org, ws)
	if err != nil {
		return err
	}
	names := cmdutil.NewNameBook(c)
	return opts.Output.Print(opts.IO, ks, func() cmdutil.Table {
		return inferenceKeyTable(func(id string) string { return names.MemberName(ctx, org, id) }, ks...)
	})
}

// GetOptions configure gw inference-keys get.
type GetOptions = cmdutil.IDOptions

// NewCmdGet builds `gw inference-keys get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	return cmdutil.NewIDCmd(f, "get KEY", "Show an inference key's metadata (KEY: id, name or prefix)", runF, getRun)
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	id, err := resolveInferenceKey(ctx, c, org, ws, opts.ID)
	if err != nil {
		return err
	}
	k, err := c.GetInferenceKey(ctx, org, ws, id)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, k, func() cmdutil.Table { return inferenceKeyDetail(k) })
}

// CreateOptions configure gw inference-keys create.
type CreateOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Name   string
	// User is the owner (UUID or email of an organization member); empty
	// means the caller.
	User       string
	ExpiresAt  *time.Time
	RateLimits cmdutil.RateLimitChange
	// Tags are the key's cost-centre tags (--tag team=search).
	Tags map[string]string
}

// NewCmdCreate builds `gw inference-keys create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{IO: f.IO, Client: f.AuthedClient}
	var expiry cmdutil.ExpiryFlags
	var limits cmdutil.RateLimitFlags
	var tagPairs []string
	cmd := &cobra.Command{
		Use:   "create --name NAME [--user USER] [--expires-in 90d] [--rpm N] [--tpm N] [--tag KEY=VALUE]...",
		Short: "Issue an inference key in the workspace; prints its token once",
		Example: `  # the token alone goes to stdout, ready for a secret store
  GW_INFERENCE_KEY=$(gw inference-keys create --name my-app --expires-in 90d)
  # a key owned by a colleague, in another workspace
  gw inference-keys create --name batch-jobs --user alice@example.com --workspace research
  # a key whose usage is reported (and budgeted) under team search
  gw inference-keys create --name search-api --tag team=search --tag env=prod
  # the whole record, token included, for automation
  gw inference-keys create --name ci --expires-at 2026-12-31T00:00:00Z -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "name"); err != nil {
				return err
			}
			var err error
			if opts.ExpiresAt, err = expiry.Resolve(time.Now()); err != nil {
				return err
			}
			if opts.RateLimits, err = limits.Read(cmd); err != nil {
				return err
			}
			if opts.Tags, err = parseTagFlags(tagPairs); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return createRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Name, "name", "", "what the key is for (1 to 100 characters)")
	cmd.Flags().StringVar(&opts.User, "user", "", "owner: an active organization member (UUID or email; default: you)")
	cmdutil.AddExpiryFlags(cmd, &expiry)
	limits.Add(cmd)
	cmd.Flags().StringArrayVar(&tagPairs, "tag", nil, "a cost-centre tag KEY=VALUE (repeatable, up to 20)")
	return cmd
}

func createRun(ctx context.Context, opts *CreateOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	in := wire.InferenceKeyCreate{Name: opts.Name, ExpiresAt: opts.ExpiresAt, Tags: opts.Tags}
	if !opts.RateLimits.Empty() {
		in.RateLimits = opts.RateLimits.Apply(nil)
	}
	if opts.User != "" {
		id, err := cmdutil.MemberRef(ctx, c, org, opts.User)
		if err != nil {
			return err
		}
		in.UserID = &id
	}
	k, err := c.CreateInferenceKey(ctx, org, ws, in)
	if err != nil {
		return err
	}
	if opts.Output.Format == cmdutil.OutputTable {
		fmt.Fprintf(opts.IO.ErrOut, "Issued inference key %s (%s) in workspace %s.\n", k.ID, k.Prefix, ws)
	}
	return opts.Output.PrintOnce(opts.IO, "inference key", k.Token, k, func() cmdutil.Table { return inferenceKeyDetail(k) })
}

// RevokeOptions configure gw inference-keys revoke.
type RevokeOptions = cmdutil.IDOptions

// NewCmdRevoke builds `gw inference-keys revoke`.
func NewCmdRevoke(f *cmdutil.Factory, runF func(context.Context, *RevokeOptions) error) *cobra.Command {
	return cmdutil.NewDestructiveIDCmd(f, "revoke KEY", "Revoke an inference key (id, name or prefix; idempotent); requests with it are refused", runF, revokeRun)
}

func revokeRun(ctx context.Context, opts *RevokeOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return err
	}
	id, err := resolveInferenceKey(ctx, c, org, ws, opts.ID)
	if err != nil {
		return err
	}
	if err := cmdutil.Confirm(opts.IO, fmt.Sprintf("Revoke inference key %s? Requests using it will be refused.", cmdutil.DescribeForPrompt(opts.IO, opts.Yes, opts.ID, func() (string, error) {
		k, err := c.GetInferenceKey(ctx, org, ws, id)
		return fmt.Sprintf("%q (%s…, %s)", k.Name, k.Prefix, k.Status), err
	})), opts.Yes); err != nil {
		return err
	}
	k, err := c.RevokeInferenceKey(ctx, org, ws, id)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, k, func() cmdutil.Table { return inferenceKeyDetail(k) })
}
