package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/wire"
)

// NewCmdInferenceKeys builds `gw inference-keys`.
func NewCmdInferenceKeys(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "inference-keys",
		Aliases: []string{"ik"},
		Short:   "Manage a workspace's inference keys (sk-gw-…), which call models on the data plane",
	}
	cmd.AddCommand(
		NewCmdInferenceKeysList(f, nil),
		NewCmdInferenceKeysGet(f, nil),
		NewCmdInferenceKeysCreate(f, nil),
		NewCmdInferenceKeysUpdate(f, nil),
		NewCmdInferenceKeysRevoke(f, nil),
	)
	return cmd
}

// inferenceKeyTable is a key per row, its owner named (owner names the
// user id by email where the key may list members). The id and the
// creation are wide: the name and prefix say which key it is; piped, the
// id stays the first column.
func inferenceKeyTable(owner func(id string) string, ks ...wire.InferenceKey) Table {
	t := Table{Headers: []string{"id", "name", "prefix", "status", "owner", "tags", "expires", "created"},
		Wide: []string{"id", "created"}, Shrink: []string{"tags", "name", "owner"}}
	for _, k := range ks {
		t.Rows = append(t.Rows, []string{k.ID.String(), k.Name, k.Prefix, k.Status, owner(k.UserID.String()), tagsCell(k.Tags),
			dateCell(k.ExpiresAt), dateCell(&k.CreatedAt)})
	}
	return t
}

func inferenceKeyDetail(k wire.InferenceKey) Table {
	return detailTable("id", k.ID.String(), "prefix", k.Prefix, "name", k.Name, "status", k.Status,
		"org_id", k.OrgID.String(), "workspace_id", k.WorkspaceID.String(), "user_id", k.UserID.String(),
		"expires_at", timeCell(k.ExpiresAt), "revoked_at", timeCell(k.RevokedAt), "rate_limits", cmdutil.RateLimitsCell(k.RateLimits),
		"tags", tagsCell(k.Tags), "created_at", timeCell(&k.CreatedAt), "updated_at", timeCell(&k.UpdatedAt))
}

// InferenceKeysListOptions configure gw inference-keys list.
type InferenceKeysListOptions = ListOptions

// NewCmdInferenceKeysList builds `gw inference-keys list`.
func NewCmdInferenceKeysList(f *Factory, runF func(context.Context, *InferenceKeysListOptions) error) *cobra.Command {
	return newListCmd(f, "List the workspace's inference keys (metadata only)", runF, inferenceKeysListRun)
}

func inferenceKeysListRun(ctx context.Context, opts *InferenceKeysListOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	names := newNameBook(c)
	return opts.f.Print(opts.Output, ks, func() Table {
		return inferenceKeyTable(func(id string) string { return names.memberName(ctx, org, id) }, ks...)
	})
}

// InferenceKeysGetOptions configure gw inference-keys get.
type InferenceKeysGetOptions = IDOptions

// NewCmdInferenceKeysGet builds `gw inference-keys get`.
func NewCmdInferenceKeysGet(f *Factory, runF func(context.Context, *InferenceKeysGetOptions) error) *cobra.Command {
	return newIDCmd(f, "get KEY", "Show an inference key's metadata (KEY: id, name or prefix)", runF, inferenceKeysGetRun)
}

func inferenceKeysGetRun(ctx context.Context, opts *InferenceKeysGetOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	return opts.f.Print(opts.Output, k, func() Table { return inferenceKeyDetail(k) })
}

// InferenceKeysCreateOptions configure gw inference-keys create.
type InferenceKeysCreateOptions struct {
	f      *Factory
	Output string
	Name   string
	// User is the owner (UUID or email of an organization member); empty
	// means the caller.
	User       string
	ExpiresAt  *time.Time
	RateLimits cmdutil.RateLimitChange
	// Tags are the key's cost-centre tags (--tag team=search).
	Tags map[string]string
}

// NewCmdInferenceKeysCreate builds `gw inference-keys create`.
func NewCmdInferenceKeysCreate(f *Factory, runF func(context.Context, *InferenceKeysCreateOptions) error) *cobra.Command {
	opts := &InferenceKeysCreateOptions{f: f}
	var expiry expiryFlags
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
			if err := checkOutput(opts.Output); err != nil {
				return err
			}
			if err := requireFlags(cmd.Flags(), "name"); err != nil {
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
			return inferenceKeysCreateRun(cmd.Context(), opts)
		},
	}
	addOutputFlag(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Name, "name", "", "what the key is for (1 to 100 characters)")
	cmd.Flags().StringVar(&opts.User, "user", "", "owner: an active organization member (UUID or email; default: you)")
	addExpiryFlags(cmd, &expiry)
	limits.Add(cmd)
	cmd.Flags().StringArrayVar(&tagPairs, "tag", nil, "a cost-centre tag KEY=VALUE (repeatable, up to 20)")
	return cmd
}

func inferenceKeysCreateRun(ctx context.Context, opts *InferenceKeysCreateOptions) error {
	c, s, err := opts.f.AuthedClient()
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
		id, err := memberRef(ctx, c, org, opts.User)
		if err != nil {
			return err
		}
		in.UserID = &id
	}
	k, err := c.CreateInferenceKey(ctx, org, ws, in)
	if err != nil {
		return err
	}
	if opts.Output == OutputTable {
		fmt.Fprintf(opts.f.IO.ErrOut, "Issued inference key %s (%s) in workspace %s.\n", k.ID, k.Prefix, ws)
	}
	return printOnce(opts.f, opts.Output, "inference key", k.Token, k, func() Table { return inferenceKeyDetail(k) })
}

// InferenceKeysRevokeOptions configure gw inference-keys revoke.
type InferenceKeysRevokeOptions = IDOptions

// NewCmdInferenceKeysRevoke builds `gw inference-keys revoke`.
func NewCmdInferenceKeysRevoke(f *Factory, runF func(context.Context, *InferenceKeysRevokeOptions) error) *cobra.Command {
	return newDestructiveIDCmd(f, "revoke KEY", "Revoke an inference key (id, name or prefix; idempotent); requests with it are refused", runF, inferenceKeysRevokeRun)
}

func inferenceKeysRevokeRun(ctx context.Context, opts *InferenceKeysRevokeOptions) error {
	c, s, err := opts.f.AuthedClient()
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
	if err := opts.f.Confirm(fmt.Sprintf("Revoke inference key %s? Requests using it will be refused.", describeForPrompt(opts.f.IO, opts.Yes, opts.ID, func() (string, error) {
		k, err := c.GetInferenceKey(ctx, org, ws, id)
		return fmt.Sprintf("%q (%s…, %s)", k.Name, k.Prefix, k.Status), err
	})), opts.Yes); err != nil {
		return err
	}
	k, err := c.RevokeInferenceKey(ctx, org, ws, id)
	if err != nil {
		return err
	}
	return opts.f.Print(opts.Output, k, func() Table { return inferenceKeyDetail(k) })
}
