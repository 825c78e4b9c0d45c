package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// Dynamic shell completion lists what the current context can see, through
// the API: organization and workspace slugs, policy names, key and service
// account names. Completion runs on every <TAB>, so it must never print:
// any failure (no server, not logged in, a permission the key lacks) is
// ShellCompDirectiveError, which shells take as "no suggestions".

// completer lists candidates as "value\tdescription" lines.
type completer func(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command) ([]string, error)

// positionalCompleters name, by command path below the root, what the
// first positional argument completes to. They live in one table rather
// than in each constructor because some of those commands are built by
// shared helpers (cmdutil.NewIDCmd), and because the command packages,
// which import no other, cannot reach the API listings completion needs
// to share; the root wires the table over the whole tree.
// Flag values are flagCompletions' (completion_values.go).
var positionalCompleters = map[string]completer{
	"orgs get":                  completeOrgs,
	"orgs update":               completeOrgs,
	"orgs delete":               completeOrgs,
	"workspaces get":            completeWorkspaces,
	"workspaces update":         completeWorkspaces,
	"workspaces delete":         completeWorkspaces,
	"policies get":              completePolicies,
	"policies delete":           completePolicies,
	"inference-keys get":        completeInferenceKeys,
	"inference-keys revoke":     completeInferenceKeys,
	"inference-keys update":     completeInferenceKeys,
	"keys get":                  completeManagementKeys,
	"keys revoke":               completeManagementKeys,
	"service-accounts get":      completeServiceAccounts,
	"service-accounts delete":   completeServiceAccounts,
	"models get":                completeModels,
	"aliases delete":            completeAliases,
	"budgets create-for-tag":    completeTagPairs,
	"catalog retire":            completeModels,
	"credentials get":           completeCredentials,
	"credentials update":        completeCredentials,
	"credentials delete":        completeCredentials,
	"data-planes enroll":        completeEnrollments("pending"),
	"data-planes revoke":        completeEnrollments("approved"),
	"data-planes get":           completeDataPlanes,
	"invitations revoke":        completeInvitations,
	"invitations reissue":       completeInvitations,
	"members update":            completeMembers,
	"members remove":            completeMembers,
	"workspaces members add":    completeMembers,
	"workspaces members update": completeWorkspaceMembers,
	"workspaces members remove": completeWorkspaceMembers,
}

// addDynamicCompletion wires the completers into a built command tree:
// the global --org, --workspace and --context flags, the positional
// arguments of positionalCompleters and the flags of flagCompletions.
func addDynamicCompletion(f *cmdutil.Factory, root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("org", completion(f, completeOrgs))
	_ = root.RegisterFlagCompletionFunc("workspace", completion(f, completeWorkspaces))
	_ = root.RegisterFlagCompletionFunc("context", contextValues(f))
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		path := strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
		if c, ok := positionalCompleters[path]; ok && cmd.ValidArgsFunction == nil {
			complete := completion(f, c)
			cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return complete(cmd, args, toComplete)
			}
		}
		if path == "aliases set" && cmd.ValidArgsFunction == nil {
			cmd.ValidArgsFunction = aliasSetArgs(f)
		}
		cmd.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
			if c := flagCompletionFor(path, fl.Name); c != nil {
				_ = cmd.RegisterFlagCompletionFunc(fl.Name, c(f))
			}
		})
		if fl := cmd.LocalFlags().Lookup("output"); fl != nil {
			_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(cmdutil.OutputFormats, cobra.ShellCompDirectiveNoFileComp))
		}
		if path == "login" {
			_ = cmd.RegisterFlagCompletionFunc("org", completion(f, completeOrgs))
			_ = cmd.RegisterFlagCompletionFunc("workspace", completion(f, completeWorkspaces))
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completion adapts a completer to cobra: candidates filtered by what was
// typed, no file names, and silence on error.
func completion(f *cmdutil.Factory, c completer) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		all, err := c(ctx, f, cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return withPrefix(all, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func candidate(value, desc string) string {
	if desc == "" || desc == value {
		return value
	}
	// A tab ends the value for the shell; one inside the description
	// would cut it short.
	return value + "\t" + strings.ReplaceAll(desc, "\t", " ")
}

func completeOrgs(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	c, _, err := f.AuthedClient()
	if err != nil {
		return nil, err
	}
	var out []string
	cursor := ""
	for range 5 { // a shell waits for this; a few pages of 200 are plenty
		p, err := c.ListOrganizations(ctx, 200, cursor)
		if err != nil {
			return nil, err
		}
		for _, o := range p.Data {
			out = append(out, candidate(o.Slug, o.Name))
		}
		if p.Page.NextCursor == nil || *p.Page.NextCursor == "" {
			break
		}
		cursor = *p.Page.NextCursor
	}
	return out, nil
}

// inOrg lists something of the context's organization and turns each
// item into a completion candidate (nil drops it).
func inOrg[T any](ctx context.Context, f *cmdutil.Factory, list func(*client.Client, context.Context, string) ([]T, error), cand func(T) *string) ([]string, error) {
	c, s, err := f.AuthedClient()
	if err != nil {
		return nil, err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return nil, err
	}
	items, err := list(c, ctx, org)
	return candidates(items, cand), err
}

// inWorkspace is inOrg for something of the context's workspace.
func inWorkspace[T any](ctx context.Context, f *cmdutil.Factory, list func(*client.Client, context.Context, string, string) ([]T, error), cand func(T) *string) ([]string, error) {
	c, s, err := f.AuthedClient()
	if err != nil {
		return nil, err
	}
	org, ws, err := s.RequireWorkspace()
	if err != nil {
		return nil, err
	}
	items, err := list(c, ctx, org, ws)
	return candidates(items, cand), err
}

func candidates[T any](items []T, cand func(T) *string) []string {
	var out []string
	for _, it := range items {
		if c := cand(it); c != nil {
			out = append(out, *c)
		}
	}
	return out
}

func some(s string) *string { return &s }

func completeWorkspaces(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	return inOrg(ctx, f, (*client.Client).ListWorkspaces, func(w wire.Workspace) *string { return some(candidate(w.Slug, w.Name)) })
}

func completePolicies(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	return inWorkspace(ctx, f, (*client.Client).ListPolicies, func(p wire.Policy) *string {
		state := "enabled"
		if !p.Enabled {
			state = "disabled"
		}
		return some(candidate(p.Name, state))
	})
}

func completeInferenceKeys(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	return inWorkspace(ctx, f, (*client.Client).ListInferenceKeys, func(k wire.InferenceKey) *string {
		if k.Status != "active" {
			return nil
		}
		return some(candidate(k.Name, k.Prefix+"…"))
	})
}

// completeManagementKeys lists the labels of the keys at the command's
// --scope, the place the command itself will look.
func completeManagementKeys(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command) ([]string, error) {
	c, s, err := f.AuthedClient()
	if err != nil {
		return nil, err
	}
	level, err := cmd.Flags().GetString("scope")
	if err != nil {
		return nil, err
	}
	scope, err := cmdutil.ScopeFor(s, level, "instance")
	if err != nil {
		return nil, err
	}
	ks, err := c.ListManagementKeys(ctx, scope, "")
	var out []string
	for _, k := range ks {
		if k.Status == "active" {
			out = append(out, candidate(k.Label, k.Prefix+"…"))
		}
	}
	return out, err
}

func completeServiceAccounts(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	return inOrg(ctx, f, (*client.Client).ListServiceAccounts, func(u wire.User) *string { return some(candidate(u.Name, u.Email)) })
}

// catalogInForce is the catalog the context's organization sees.
func catalogInForce(ctx context.Context, f *cmdutil.Factory) (wire.Catalog, error) {
	c, s, err := f.AuthedClient()
	if err != nil {
		return wire.Catalog{}, err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return wire.Catalog{}, err
	}
	return c.GetCatalog(ctx, client.OrgScope(org))
}

func completeProviders(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	cat, err := catalogInForce(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cat.Providers))
	for _, p := range cat.Providers {
		out = append(out, candidate(p.ID, p.Name))
	}
	return out, nil
}

func completeModels(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	cat, err := catalogInForce(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cat.Models))
	for _, m := range cat.Models {
		out = append(out, candidate(m.ID, m.Name))
	}
	return out, nil
}
