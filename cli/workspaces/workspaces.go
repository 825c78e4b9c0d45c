// Package workspaces is `gw workspaces`, and `gw workspaces members`.
package workspaces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/wire"
)

// NewCmd builds `gw workspaces`.
func NewCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "workspaces", Aliases: []string{"ws"}, Short: "Manage the workspaces of an organization"}
	cmd.AddCommand(
		NewCmdList(f, nil),
		NewCmdGet(f, nil),
		NewCmdCreate(f, nil),
		NewCmdUpdate(f, nil),
		NewCmdDelete(f, nil),
		NewCmdMembers(f),
	)
	return cmd
}

func workspaceTable(wss ...wire.Workspace) cmdutil.Table {
	t := cmdutil.Table{Headers: []string{"id", "slug", "name", "created"}}
	for _, w := range wss {
		t.Rows = append(t.Rows, []string{w.ID.String(), w.Slug, w.Name, cmdutil.TimeCell(&w.CreatedAt)})
	}
	return t
}

func workspaceDetail(w wire.Workspace) cmdutil.Table {
	return cmdutil.DetailTable("id", w.ID.String(), "org_id", w.OrgID.String(), "slug", w.Slug, "name", w.Name,
		"rate_limits", cmdutil.RateLimitsCell(w.RateLimits), "required_tags", cmdutil.OrDash(strings.Join(w.RequiredTags, ", ")),
		"created_at", cmdutil.TimeCell(&w.CreatedAt), "updated_at", cmdutil.TimeCell(&w.UpdatedAt))
}

// ListOptions configure gw workspaces list.
type ListOptions = cmdutil.ListOptions

// NewCmdList builds `gw workspaces list`.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	return cmdutil.NewListCmd(f, "List the workspaces of the organization that you can read", runF, listRun)
}

func listRun(ctx context.Context, opts *ListOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	wss, err := c.ListWorkspaces(ctx, org)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, wss, func() cmdutil.Table { return workspaceTable(wss...) })
}

// GetOptions configure gw workspaces get.
type GetOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	// Workspace is the argument; empty means the effective workspace.
	Workspace string
}

// NewCmdGet builds `gw workspaces get`.
func NewCmdGet(f *cmdutil.Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "get [WORKSPACE]",
		Short: "Show a workspace (default: the current one)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.Workspace = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return getRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	return cmd
}

// workspaceArg is the organization and the workspace a command names, or
// the effective workspace.
func workspaceArg(s cmdutil.Settings, given string) (string, string, error) {
	if given == "" {
		return s.RequireWorkspace()
	}
	org, err := s.RequireOrg()
	return org, given, err
}

func getRun(ctx context.Context, opts *GetOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := workspaceArg(s, opts.Workspace)
	if err != nil {
		return err
	}
	w, err := c.GetWorkspace(ctx, org, ws)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, w, func() cmdutil.Table { return workspaceDetail(w) })
}

// CreateOptions configure gw workspaces create.
type CreateOptions struct {
	IO     *cmdutil.IOStreams
	Client func() (*client.Client, cmdutil.Settings, error)
	Output cmdutil.Output
	Name   string
	Slug   string
}

// NewCmdCreate builds `gw workspaces create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "create --name NAME [--slug SLUG]",
		Short: "Create a workspace in the organization",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd.Flags(), "name"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return cmdutil.WithFlags(createRun(cmd.Context(), opts), workspaceFields...)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmd.Flags().StringVar(&opts.Name, "name", "", "display name (1 to 100 characters)")
	cmd.Flags().StringVar(&opts.Slug, "slug", "", "URL name, unique in the organization (default: derived from the name)")
	return cmd
}

func createRun(ctx context.Context, opts *CreateOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	w, err := c.CreateWorkspace(ctx, org, wire.WorkspaceCreate{Name: opts.Name, Slug: opts.Slug})
	if err != nil {
		return err
	}
	// A derived slug that was taken gets a suffix: say so, or a step run
	// twice makes "search-2" unnoticed (issue 22, row 5).
	if want := backend.Slugify(opts.Name, "workspace"); opts.Slug == "" && w.Slug != want {
		fmt.Fprintf(opts.IO.ErrOut, "note: slug %q is taken in this organization, so this workspace is %q; pass --slug to choose one (gw workspaces list shows them)\n", want, w.Slug)
	}
	return opts.Output.Print(opts.IO, w, func() cmdutil.Table { return workspaceDetail(w) })
}

// UpdateOptions configure gw workspaces update.
type UpdateOptions struct {
	IO        *cmdutil.IOStreams
	Client    func() (*client.Client, cmdutil.Settings, error)
	Output    cmdutil.Output
	Workspace string
	Name      *string
	Slug      *string
	// RateLimits are the workspace's default and ceiling for its keys.
	RateLimits cmdutil.RateLimitChange
	// RequiredTags replaces the tag keys every request must carry; an
	// empty list clears them, nil keeps them.
	RequiredTags *[]string
	// ResponseCache and PromptCache replace the workspace's caches'
	// settings; nil keeps them (caches.go).
	ResponseCache *wire.WorkspaceResponseCache
	PromptCache   *wire.WorkspacePromptCache
}

// NewCmdUpdate builds `gw workspaces update`.
func NewCmdUpdate(f *cmdutil.Factory, runF func(context.Context, *UpdateOptions) error) *cobra.Command {
	opts := &UpdateOptions{IO: f.IO, Client: f.AuthedClient}
	var rename cmdutil.RenameFlags
	var limits cmdutil.RateLimitFlags
	var required requiredTagFlags
	var caches cacheFlags
	cmd := &cobra.Command{
		Use:   "update [WORKSPACE] [--name NAME] [--slug SLUG] [--rpm N] [--tpm N] [--no-rate-limits] [--require-tag KEY]... [--no-required-tags] [--response-cache] [--prompt-cache-inject]",
		Short: "Rename a workspace, change its slug, its keys' rate limits or its required tags (default: the current one)",
		Long: `Change a workspace (the current one, or WORKSPACE): its name or slug, the rate
limits of its keys (--rpm, --tpm: each key's default and ceiling), or the tag
keys every inference request in it must carry (--require-tag, repeatable; a
request without one of them, from its key's tags or its X-Gw-Tags header, is
refused with 400). --require-tag replaces the list; --no-required-tags clears
it. gw workspaces get shows them.

--response-cache (with --response-cache-ttl and --response-cache-max-entry-bytes,
default 300 s and 65536 bytes) answers repeated deterministic requests from the
data plane's memory (docs/cache.md); --no-response-cache turns it off.
--prompt-cache-inject (with --prompt-cache-min-tokens, default 1024) marks the
end of a long system prompt and tool list for the provider's prompt cache when
the caller marked none (docs/promptcache.md); --no-prompt-cache turns it off.`,
		Example: `  gw workspaces update search --name "Search & ranking"
  gw workspaces update search --require-tag team --require-tag feature
  gw workspaces update search --no-required-tags
  gw workspaces update --rpm 600 --tpm 200000
  gw workspaces update --response-cache --response-cache-ttl 600
  gw workspaces update --prompt-cache-inject --prompt-cache-min-tokens 2048`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.Workspace = args[0]
			}
			var err error
			if opts.RateLimits, err = limits.Read(cmd); err != nil {
				return err
			}
			if opts.RequiredTags, err = required.read(cmd); err != nil {
				return err
			}
			if opts.ResponseCache, opts.PromptCache, err = caches.read(cmd); err != nil {
				return err
			}
			renamed := cmd.Flags().Changed("name") || cmd.Flags().Changed("slug")
			if !renamed && opts.RateLimits.Empty() && opts.RequiredTags == nil && opts.ResponseCache == nil && opts.PromptCache == nil {
				return cmdutil.UsageError{Err: errors.New("nothing to change: pass --name, --slug, --rpm, --tpm, --no-rate-limits, --require-tag, --no-required-tags, --response-cache, --no-response-cache, --prompt-cache-inject or --no-prompt-cache")}
			}
			if renamed {
				if opts.Name, opts.Slug, err = rename.Read(cmd); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return cmdutil.WithFlags(updateRun(cmd.Context(), opts), append(workspaceFields, cacheFields...)...)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	rename.Add(cmd)
	limits.Add(cmd)
	required.add(cmd)
	caches.add(cmd)
	return cmd
}

// workspaceFields are a workspace request's fields and the flags that set
// them.
var workspaceFields = []cmdutil.FlagField{
	{Loc: "body.name", Flag: "--name"},
	{Loc: "body.slug", Flag: "--slug", Want: "lowercase letters, digits and -, starting and ending with a letter or digit, e.g. search-team", Input: true},
	{Loc: "body.required_tags", Flag: "--require-tag", Input: true},
	{Loc: "body.rate_limits.requests_per_minute", Flag: "--rpm"},
	{Loc: "body.rate_limits.tokens_per_minute", Flag: "--tpm"},
}

// requiredTagFlags set a workspace's required tag keys.
type requiredTagFlags struct {
	keys []string
	none bool
}

func (r *requiredTagFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&r.keys, "require-tag", nil, "a tag key every request must carry, e.g. team (repeatable or comma-separated; replaces the list)")
	cmd.Flags().BoolVar(&r.none, "no-required-tags", false, "require no tag keys")
}

// read returns the new list (empty to clear), or nil when neither flag
// was given. The keys are checked here with the server's rule, so that
// the message names the flag.
func (r *requiredTagFlags) read(cmd *cobra.Command) (*[]string, error) {
	given := cmd.Flags().Changed("require-tag")
	if err := cmdutil.ExclusiveFlags(cmd.Flags(), "require-tag", "no-required-tags"); err != nil {
		return nil, err
	}
	if r.none {
		return &[]string{}, nil
	}
	if !given {
		return nil, nil
	}
	keys := []string{}
	for _, k := range r.keys {
		k = strings.TrimSpace(k)
		if m := tags.CheckKey(k); m != "" {
			return nil, cmdutil.UsageError{Err: fmt.Errorf("--require-tag %q: %s", k, m)}
		}
		if slices.Contains(keys, k) {
			return nil, cmdutil.UsageError{Err: fmt.Errorf("--require-tag %s is given twice", k)}
		}
		keys = append(keys, k)
	}
	if len(keys) > tags.MaxPairs {
		return nil, cmdutil.UsageError{Err: fmt.Errorf("--require-tag: at most %d tag keys, not %d", tags.MaxPairs, len(keys))}
	}
	return &keys, nil
}

func updateRun(ctx context.Context, opts *UpdateOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, ws, err := workspaceArg(s, opts.Workspace)
	if err != nil {
		return err
	}
	in := wire.WorkspaceUpdate{Name: opts.Name, Slug: opts.Slug, RequiredTags: opts.RequiredTags,
		ResponseCache: opts.ResponseCache, PromptCache: opts.PromptCache}
	if !opts.RateLimits.Empty() {
		cur, err := c.GetWorkspaceSettings(ctx, org, ws)
		if err != nil {
			return err
		}
		in.RateLimits = opts.RateLimits.Apply(cur.RateLimits)
	}
	w, err := c.UpdateWorkspace(ctx, org, ws, in)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, w, func() cmdutil.Table { return workspaceDetail(w) })
}

// DeleteOptions configure gw workspaces delete.
type DeleteOptions struct {
	IO        *cmdutil.IOStreams
	Client    func() (*client.Client, cmdutil.Settings, error)
	Output    cmdutil.Output
	Workspace string
	Yes       bool
}

// NewCmdDelete builds `gw workspaces delete`.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{IO: f.IO, Client: f.AuthedClient}
	cmd := &cobra.Command{
		Use:   "delete WORKSPACE",
		Short: "Delete a workspace with its memberships, inference keys and credentials (usage history stays)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Check(); err != nil {
				return err
			}
			opts.Workspace = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return deleteRun(cmd.Context(), opts)
		},
	}
	cmdutil.AddOutput(cmd, &opts.Output)
	cmdutil.AddYesFlag(cmd, &opts.Yes)
	return cmd
}

func deleteRun(ctx context.Context, opts *DeleteOptions) error {
	c, s, err := opts.Client()
	if err != nil {
		return err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return err
	}
	q := fmt.Sprintf("Delete workspace %s of %s with its inference keys and credentials?", opts.Workspace, org)
	if err := cmdutil.Confirm(opts.IO, q, opts.Yes); err != nil {
		return err
	}
	d, err := c.DeleteWorkspace(ctx, org, opts.Workspace)
	if err != nil {
		return err
	}
	return opts.Output.Print(opts.IO, d, func() cmdutil.Table { return cmdutil.DeletedTable(d) })
}
