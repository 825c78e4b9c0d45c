package cli

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// Completion of flag values: every flag whose values are a known set
// completes to them (issue 26, row 10). Fixed sets (periods, scopes, roles,
// permissions) come from the same lists the commands check against, so
// they cannot drift; the rest read the API as positionalCompleters do.

// flagCompletions name, by "command path --flag", how a flag's value
// completes. A path covers the commands below it ("credentials --scope" is
// the --scope of every credentials command); the longest path wins, so
// "usage --period" (the dashboard's) gives way to "usage report --period".
var flagCompletions = map[string]func(*cmdutil.Factory) cobra.CompletionFunc{
	"usage --period":                      fixedValues(periodChoices(wire.UsageDatelessPeriods)...),
	"usage report --period":               fixedValues(periodChoices(wire.UsagePeriods)...),
	"usage export --period":               fixedValues(periodChoices(wire.UsagePeriods)...),
	"usage --by":                          apiValues(completeBreakdowns),
	"usage --tag-key":                     apiValues(completeTagKeys),
	"usage --tag":                         apiValues(completeTagPairs),
	"usage export --format":               fixedValues("csv", "focus"),
	"budgets create-for-tag --period":     fixedValues("day\tUTC days", "month\tUTC months"),
	"inference-keys --tag":                apiValues(completeTagPairs),
	"inference-keys update --untag":       apiValues(completeTagKeys),
	"inference-keys create --user":        apiValues(completeMembers),
	"keys list --user":                    apiValues(completeMembers),
	"aliases --scope":                     fixedValues("org\tthe organization's aliases", "workspace\ta workspace's, over the organization's"),
	"activity --scope":                    fixedValues("instance\teverything", "org\tthe organization's events"),
	"catalog --scope":                     fixedValues("instance", "org", "workspace"),
	"catalog retire --provider":           apiValues(completeProviders),
	"credentials --scope":                 fixedValues("platform\tinstance-wide", "org", "workspace"),
	"mcp --scope":                         fixedValues("org\tthe organization's servers", "workspace\ta workspace's, over the organization's"),
	"credentials --setting":               settingValues,
	"keys --scope":                        fixedValues("instance", "org", "workspace"),
	"keys create --permissions":           permissionValues,
	"service-accounts --permissions":      permissionValues,
	"admin create-key --permissions":      permissionValues,
	"members --role":                      fixedValues(auth.OrgRoles...),
	"members update --status":             fixedValues("active", "suspended\tkeeps the membership, refuses the member's keys"),
	"invitations --role":                  fixedValues(auth.OrgRoles...),
	"workspaces members --role":           fixedValues(auth.WorkspaceRoles...),
	"policies explain --model":            apiValues(completeModelsAndAliases),
	"policies explain --key":              apiValues(completeInferenceKeys),
	"policies explain --capability":       fixedValues("tools", "reasoning", "structured_output"),
	"policies explain --phase":            fixedValues("inference\ta request", "discovery\tmodel listing"),
	"data-planes enroll --org":            apiValues(completeOrgs),
	"serve --log-format":                  fixedValues("text", "json"),
	"serve --role":                        fixedValues(server.RoleAll+"\tcontrol plane and data plane", server.RoleControlPlane, server.RoleDataPlane),
	"serve --bundle-cache":                fixedValues("on\tkeep the last bundles in the data dir", "off\tin memory only"),
	"login --context":                     contextValues,
	"logout --context":                    contextValues,
	"usage report --workspace-filter":     apiValues(completeWorkspaces),
	"usage export --workspace-filter":     apiValues(completeWorkspaces),
	"usage export --provider":             apiValues(completeProviders),
	"usage export --model":                apiValues(completeModels),
	"credentials create --provider":       apiValues(completeProviders),
	"usage --workspace-filter":            apiValues(completeWorkspaces),
	"usage report --provider":             apiValues(completeProviders),
	"usage report --model":                apiValues(completeModels),
	"workspaces members add --role":       fixedValues(auth.WorkspaceRoles...),
	"workspaces members update --role":    fixedValues(auth.WorkspaceRoles...),
	"usage guardrails --period":           fixedValues(periodChoices(wire.UsagePeriods)...),
	"usage guardrails --provider":         apiValues(completeProviders),
	"usage guardrails --model":            apiValues(completeModels),
	"usage guardrails --workspace-filter": apiValues(completeWorkspaces),
	"guardrails --scope":                  fixedValues("org\tthe organization's guardrails (every workspace)", "workspace\ta workspace's own"),
}

// flagCompletionFor is the completion of a command's flag: the entry of
// the longest path above it.
func flagCompletionFor(path, flag string) func(*cmdutil.Factory) cobra.CompletionFunc {
	for p := path; ; {
		if c, ok := flagCompletions[p+" --"+flag]; ok {
			return c
		}
		i := strings.LastIndex(p, " ")
		if i < 0 {
			return nil
		}
		p = p[:i]
	}
}

// fixedValues completes to a fixed set of "value\tdescription" candidates.
func fixedValues(values ...string) func(*cmdutil.Factory) cobra.CompletionFunc {
	return func(*cmdutil.Factory) cobra.CompletionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return withPrefix(values, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
}

// apiValues completes with a completer that reads the API.
func apiValues(c completer) func(*cmdutil.Factory) cobra.CompletionFunc {
	return func(f *cmdutil.Factory) cobra.CompletionFunc { return completion(f, c) }
}

// withPrefix keeps the candidates whose value starts with what was typed.
func withPrefix(candidates []string, toComplete string) []string {
	var out []string
	for _, cand := range candidates {
		if value, _, _ := strings.Cut(cand, "\t"); value != "" && strings.HasPrefix(value, toComplete) {
			out = append(out, cand)
		}
	}
	return out
}

func periodChoices(periods []string) []string {
	desc := map[string]string{"today": "since midnight", "7d": "the last 7 days", "30d": "the last 30 days",
		"month_to_date": "since the 1st", "custom": "--start-date and --end-date"}
	out := make([]string, len(periods))
	for i, p := range periods {
		out[i] = candidate(p, desc[p])
	}
	return out
}

// permissionValues completes a comma-separated list of permissions: the
// ones not listed yet, after what was typed up to the last comma.
func permissionValues(*cmdutil.Factory) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		done, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		given := strings.Split(done, ",")
		var out []string
		for _, p := range auth.Names() {
			if strings.HasPrefix(p, last) && !slices.Contains(given, p) {
				out = append(out, done+p)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

// contextValues completes --context with the configuration's context
// names (no API), with their servers.
func contextValues(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cfg, err := f.Config()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []string
		for _, n := range cfg.Names() {
			out = append(out, candidate(n, cfg.Contexts[n].Server))
		}
		return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// settingValues completes --setting KEY= with the settings the
// credential's provider kind takes: the --provider given to create, or
// the provider of the credential update names; every setting when neither
// is known yet. Each ends in "=" and leaves room for the value.
func settingValues(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if strings.Contains(toComplete, "=") {
			return nil, cobra.ShellCompDirectiveNoFileComp // a value: free text
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		kind := settingKind(ctx, f, cmd, args)
		var out []string
		for _, name := range providers.SettingNames {
			allowed, required := providers.CredentialSettings(kind)
			if kind != "" && !slices.Contains(allowed, name) {
				continue
			}
			value := name + "="
			if name == "deployments" {
				value = "deployments."
			}
			desc := settingDescriptions[name]
			if slices.Contains(required, name) {
				desc = "required: " + desc
			}
			out = append(out, candidate(value, desc))
		}
		return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

var settingDescriptions = map[string]string{
	"region": "AWS region (bedrock)", "project": "Google Cloud project (vertex)", "location": "Google Cloud location (vertex)",
	"api_version": "api-version (azure-openai)", "deployments": "deployments.MODEL=DEPLOYMENT (azure-openai)",
	"token_url": "OAuth token endpoint (vertex, azure-openai)",
}

// settingKind is the provider kind a --setting is for; "" when it cannot
// be told (then every setting is offered).
func settingKind(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command, args []string) catalog.Kind {
	provider, _ := cmd.Flags().GetString("provider")
	if provider == "" && len(args) > 0 {
		c, s, err := f.AuthedClient()
		if err != nil {
			return ""
		}
		level, _ := cmd.Flags().GetString("scope")
		scope, err := cmdutil.ScopeFor(s, level, "platform")
		if err != nil {
			return ""
		}
		cred, err := c.GetCredential(ctx, scope, args[0])
		if err != nil {
			return ""
		}
		provider = cred.Provider
	}
	if provider == "" {
		return ""
	}
	cat, err := catalogInForce(ctx, f)
	if err != nil {
		return ""
	}
	for _, p := range cat.Providers {
		if p.ID == provider {
			return catalog.Kind(p.Kind)
		}
	}
	return ""
}

// completeBreakdowns are the dimensions, then tag:KEY for the tag keys in
// use. The tags are a bonus: a key that may not list them still gets the
// dimensions.
func completeBreakdowns(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command) ([]string, error) {
	out := make([]string, 0, len(tui.Dimensions))
	for _, d := range tui.Dimensions {
		out = append(out, d)
	}
	keys, _ := completeTagKeys(ctx, f, cmd)
	for _, k := range keys {
		out = append(out, candidate(tui.TagPrefix+k, "the values of tag "+k))
	}
	return out, nil
}

// tagsInUse are the tags of the context's workspace's inference keys and
// tag budgets, or of every workspace of the organization without one,
// with each workspace's required tag keys: key → values.
func tagsInUse(ctx context.Context, f *cmdutil.Factory) (map[string]map[string]bool, error) {
	c, s, err := f.AuthedClient()
	if err != nil {
		return nil, err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return nil, err
	}
	workspaces := []string{s.Workspace}
	if s.Workspace == "" {
		ws, err := c.ListWorkspaces(ctx, org)
		if err != nil {
			return nil, err
		}
		workspaces = workspaces[:0]
		for i, w := range ws {
			if i == 20 { // a shell waits for this
				break
			}
			workspaces = append(workspaces, w.ID.String())
		}
	}
	tags := map[string]map[string]bool{}
	add := func(k, v string) {
		if tags[k] == nil {
			tags[k] = map[string]bool{}
		}
		if v != "" {
			tags[k][v] = true
		}
	}
	var firstErr error
	for _, ws := range workspaces {
		keys, err := c.ListInferenceKeys(ctx, org, ws)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		for _, k := range keys {
			for kk, v := range k.Tags {
				add(kk, v)
			}
		}
		budgets, _ := c.ListTagBudgets(ctx, org, ws)
		for _, b := range budgets {
			add(b.TagKey, b.TagValue)
		}
		if w, err := c.GetWorkspace(ctx, org, ws); err == nil {
			for _, k := range w.RequiredTags {
				add(k, "")
			}
		}
	}
	if len(tags) == 0 {
		return nil, firstErr
	}
	return tags, nil
}

func completeTagKeys(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	tags, err := tagsInUse(ctx, f)
	out := make([]string, 0, len(tags))
	for k := range tags {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, err
}

// completeTagPairs are KEY=VALUE pairs in use, for --tag and gw budgets
// create-for-tag.
func completeTagPairs(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	tags, err := tagsInUse(ctx, f)
	var out []string
	for k, vs := range tags {
		for v := range vs {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out, err
}

func completeMembers(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	return inOrg(ctx, f, (*client.Client).ListMembers, func(m wire.Member) *string {
		if m.ServiceAccount {
			return nil
		}
		return some(candidate(m.Email, m.Role))
	})
}

func completeWorkspaceMembers(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	return inWorkspace(ctx, f, (*client.Client).ListWorkspaceMembers, func(m wire.WorkspaceMember) *string {
		return some(candidate(m.Email, m.Role))
	})
}

func completeInvitations(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	return inOrg(ctx, f, (*client.Client).ListInvitations, func(i wire.Invitation) *string {
		if i.Status != "pending" {
			return nil
		}
		return some(candidate(i.ID.String(), i.Email+" ("+i.Role+")"))
	})
}

// completeCredentials lists the credentials at the command's --scope,
// the place the command itself will look.
func completeCredentials(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command) ([]string, error) {
	c, s, err := f.AuthedClient()
	if err != nil {
		return nil, err
	}
	level, err := cmd.Flags().GetString("scope")
	if err != nil {
		return nil, err
	}
	scope, err := cmdutil.ScopeFor(s, level, "platform")
	if err != nil {
		return nil, err
	}
	cs, err := c.ListCredentials(ctx, scope)
	out := make([]string, 0, len(cs))
	for _, cred := range cs {
		out = append(out, candidate(cred.ID.String(), cred.Provider+" "+cred.Label))
	}
	return out, err
}

// completeAliases are the organization's aliases and, with a workspace in
// the context, the workspace's, by name.
func completeAliases(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	c, s, err := f.AuthedClient()
	if err != nil {
		return nil, err
	}
	org, err := s.RequireOrg()
	if err != nil {
		return nil, err
	}
	levels := []string{""}
	if s.Workspace != "" {
		levels = append(levels, s.Workspace)
	}
	seen := map[string]bool{}
	var out []string
	var firstErr error
	for _, ws := range levels {
		as, err := c.ListModelAliases(ctx, org, ws)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		for _, a := range as {
			if seen[a.Name] {
				continue
			}
			seen[a.Name] = true
			targets := make([]string, len(a.Targets))
			for i, t := range a.Targets {
				targets[i] = t.Model
			}
			out = append(out, candidate(a.Name, "alias of "+strings.Join(targets, ", ")))
		}
	}
	if len(out) == 0 {
		return nil, firstErr
	}
	return out, nil
}

// completeModelsAndAliases is what a request may name: catalog models and
// aliases.
func completeModelsAndAliases(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command) ([]string, error) {
	models, err := completeModels(ctx, f, cmd)
	aliases, _ := completeAliases(ctx, f, cmd)
	return append(aliases, models...), err
}

// completeEnrollments lists the data planes whose enrollment has status:
// pending ones for gw data-planes enroll, approved ones for revoke.
func completeEnrollments(status string) completer {
	return func(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
		c, _, err := f.AuthedClient()
		if err != nil {
			return nil, err
		}
		es, err := c.ListEnrollments(ctx)
		var out []string
		for _, e := range es {
			if e.Status == status {
				out = append(out, candidate(e.DataPlaneID, status+", key "+shortFingerprint(e.Fingerprint)))
			}
		}
		return out, err
	}
}

func shortFingerprint(fp string) string {
	if len(fp) > 16 {
		return fp[:16] + "…"
	}
	return fp
}

// completeDataPlanes lists the data planes that sent a heartbeat.
func completeDataPlanes(ctx context.Context, f *cmdutil.Factory, _ *cobra.Command) ([]string, error) {
	c, _, err := f.AuthedClient()
	if err != nil {
		return nil, err
	}
	ds, err := c.ListDataPlanes(ctx)
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, candidate(d.ID, d.Version))
	}
	return out, err
}

// aliasSetArgs completes gw aliases set NAME MODEL[=WEIGHT]...: the alias
// names first, then catalog models.
func aliasSetArgs(f *cmdutil.Factory) cobra.CompletionFunc {
	names, models := completion(f, completeAliases), completion(f, completeModels)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return names(cmd, args, toComplete)
		}
		return models(cmd, args, toComplete)
	}
}
