package inferencekeys

import (
	"context"
	"errors"
	"maps"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// UpdateOptions configure gw inference-keys update.
type UpdateOptions struct {
	IO         *cmdutil.IOStreams
	Client     func() (*client.Client, cmdutil.Settings, error)
	Output     cmdutil.Output
	ID         string
	Name       *string
	RateLimits cmdutil.RateLimitChange
	// SetTags are set (over the key's), Untag removed; NoTags clears all
	// first.
	SetTags map[string]string
	Untag   []string
	NoTags  bool
}

// tagsChanged says the update touches the key's tags.
func (o *UpdateOptions) tagsChanged() bool {
	return len(o.SetTags) > 0 || len(o.Untag) > 0 || o.NoTags
}

// NewCmdUpdate builds `gw inference-keys update`.
func NewCmdUpdate(f *cmdutil.Factory, runF func(context.Context, *UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{IO: f.IO, Client: f.AuthedClient}
	var name string
	var limits cmdutil.RateLimitFlags
	var tagPairs []string
	cmd := &cobra.Command{
		Use:   "update KEY [--name NAME] [--rpm N] [--tpm N] [--no-rate-limits] [--tag KEY=VALUE]... [--untag KEY]... [--no-tags]",
		Short: "Rename an inference key, change its rate limits (never above the workspace's) or its tags",
		Long: `Rename an inference key or change its rate limits (never above the
workspace's). KEY is its name, its UUID or its token prefix (sk-gw-AbCd…), as
for gw inference-keys get.`,
		Example: `  gw inference-keys update my-app --rpm 600
  gw inference-keys update my-app --name my-app-prod --workspace search
  gw inference-keys update my-app --tag team=search --untag env`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.ID = args[0]
			if cmd.Flags().Changed("name") {
				opts.Name = &name
			}
			var err error
			if opts.RateLimits, err = limits.Read(cmd); err != nil {
				return err
			}
			if opts.SetTags, err = parseTagFlags(tagPairs); err != nil {
				return err
			}
			if opts.Name == nil && opts.RateLimits.Empty() && !opts.tagsChanged() {
				return cmdutil.UsageError{Err: errors.New("nothing to change: pass --name, --rpm, --tpm, --no-rate-limits, --tag, --untag or --no-tags")}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return updateRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&name, "name", "", "new name (1 to 100 characters)")
	limits.Add(cmd)
	cmd.Flags().StringArrayVar(&tagPairs, "tag", nil, "set a cost-centre tag KEY=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&opts.Untag, "untag", nil, "remove the tag KEY (repeatable)")
	cmd.Flags().BoolVar(&opts.NoTags, "no-tags", false, "remove every tag (before any --tag)")
	return cmd
}

func updateRun(ctx context.Context, opts *UpdateOptions) error {
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
	opts.ID = id
	in := wire.InferenceKeyUpdate{Name: opts.Name}
	if !opts.RateLimits.Empty() || opts.tagsChanged() {
		// The body carries both limits and the whole tag set, so what is
		// not mentioned is sent as it stands.
		cur, err := c.GetInferenceKey(ctx, org, ws, opts.ID)
		if err != nil {
			return err
		}
		if !opts.RateLimits.Empty() {
			in.RateLimits = opts.RateLimits.Apply(cur.RateLimits)
		}
		if opts.tagsChanged() {
			t := map[string]string{}
			if !opts.NoTags {
				maps.Copy(t, cur.Tags)
			}
			for _, k := range opts.Untag {
				delete(t, k)
			}
			maps.Copy(t, opts.SetTags)
			in.Tags = &t
		}
	}
	k, err := c.UpdateInferenceKey(ctx, org, ws, opts.ID, in)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, k, func() cmdutil.Table { return inferenceKeyDetail(k) })
}
