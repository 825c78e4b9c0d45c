package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/catalogdb"
	"github.com/gw-gateway/gw/server/oauth"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/toolpolicy"
)

// readContent reads everything an organization's bundle carries, leaving
// Version and CompiledAt zero: they are decided once the content is known to
// have changed.
//
// Keys, policies and credentials of a workspace the workspace list lacks
// are left out. On PostgreSQL each read sees its own snapshot, so a
// workspace created or deleted between two reads could otherwise leave a
// dangling reference, and the bundle would fail its checks; leaving them out
// is safe, because the change that made them will be compiled next.
func readContent(ctx context.Context, st *store.Store, orgID uuid.UUID) (*bundle.Body, error) {
	body := &bundle.Body{Format: bundle.Format, OrgID: orgID}

	workspaces, err := st.ListWorkspaces(ctx, store.WorkspaceFilter{OrgID: orgID})
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	listed := make(map[uuid.UUID]bool, len(workspaces))
	wsLimits := make(map[uuid.UUID]store.RateLimits, len(workspaces))
	body.Workspaces = make([]bundle.Workspace, len(workspaces))
	for i, w := range workspaces {
		body.Workspaces[i] = bundle.Workspace{ID: w.ID, Slug: w.Slug, Name: w.Name, RateLimits: bundleRateLimits(w.RateLimits),
			RequiredTags: bundleRequiredTags(w.RequiredTags), TagValues: bundleTagValues(w.TagValues),
			MCPAuditArguments: w.MCPAuditArguments != nil && *w.MCPAuditArguments,
			Archive:           bundleArchive(w.Archive)}
		if c := w.PromptCache; c != nil && c.Inject {
			body.Workspaces[i].PromptCache = &bundle.PromptCache{MinPrefixTokens: c.MinPrefixTokens}
		}
		if c := w.ResponseCache; c != nil && c.Enabled {
			body.Workspaces[i].ResponseCache = &bundle.ResponseCache{TTLSeconds: c.TTLSeconds, MaxEntryBytes: c.MaxEntryBytes}
		}
		if w.MCPDefault != nil && *w.MCPDefault == "allow" {
			body.Workspaces[i].MCPDefault = "allow"
		}
		listed[w.ID] = true
		wsLimits[w.ID] = w.RateLimits
	}
	sortByID(body.Workspaces, func(w bundle.Workspace) uuid.UUID { return w.ID })

	keys, err := st.ActiveInferenceKeysForOrg(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("list inference keys: %w", err)
	}
	body.Keys = make([]bundle.Key, 0, len(keys))
	for _, k := range keys {
		if listed[k.WorkspaceID] {
			body.Keys = append(body.Keys, bundle.Key{ID: k.ID, WorkspaceID: k.WorkspaceID, OwnerID: k.UserID, TokenHash: k.TokenHash, ExpiresAt: utc(k.ExpiresAt),
				RateLimits: bundleRateLimits(EffectiveRateLimits(k.RateLimits, wsLimits[k.WorkspaceID])), Tags: bundleTags(k.Tags)})
		}
	}
	// Keys no longer active whose provider batches are out: the data plane
	// records those lines as theirs (bundle.Key.BatchesOnly).
	holding, err := st.BatchHoldingKeysForOrg(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("list inference keys with provider batches out: %w", err)
	}
	for _, k := range holding {
		if listed[k.WorkspaceID] {
			body.Keys = append(body.Keys, bundle.Key{ID: k.ID, WorkspaceID: k.WorkspaceID, OwnerID: k.UserID, Tags: bundleTags(k.Tags), BatchesOnly: true})
		}
	}
	sortByID(body.Keys, func(k bundle.Key) uuid.UUID { return k.ID })

	// A grant idle past its last refresh token's lifetime (and the access
	// token that refresh gave) can mint nothing more: left out.
	grants, err := st.LiveOAuthGrantsForOrg(ctx, orgID, store.Now().Add(-store.OAuthRefreshTTL-oauth.AccessTokenTTL))
	if err != nil {
		return nil, fmt.Errorf("list oauth grants: %w", err)
	}
	for _, g := range grants {
		if listed[g.WorkspaceID] {
			body.OAuthGrants = append(body.OAuthGrants, bundle.OAuthGrant{ID: g.ID, WorkspaceID: g.WorkspaceID, OwnerID: g.UserID})
		}
	}

	if body.Policies, err = readPolicies(ctx, st, orgID, listed); err != nil {
		return nil, err
	}
	if err := readTagBudgets(ctx, st, body); err != nil {
		return nil, err
	}

	rows, err := catalogdb.LoadRows(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	active, err := rows.Active()
	if err != nil {
		return nil, err
	}
	body.Catalog = *active

	if body.Credentials, err = readCredentials(ctx, st, orgID, listed); err != nil {
		return nil, err
	}
	if body.Aliases, err = readAliases(ctx, st, orgID, listed); err != nil {
		return nil, err
	}
	if body.Guardrails, err = readGuardrails(ctx, st, orgID, listed); err != nil {
		return nil, err
	}
	if body.Egress, err = readEgress(ctx, st); err != nil {
		return nil, err
	}
	if err := readMCP(ctx, st, body, listed); err != nil {
		return nil, err
	}
	return body, nil
}

// readEgress is the instance's egress setting, which every bundle carries
// so that every data plane enforces it; nil while it was never set.
func readEgress(ctx context.Context, st *store.Store) (*bundle.Egress, error) {
	inst, err := st.GetInstanceState(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the egress setting: %w", err)
	}
	if inst.EgressRevision == 0 {
		return nil, nil
	}
	e := inst.EgressSetting()
	return &bundle.Egress{Revision: inst.EgressRevision, Deny: e.Deny, Allow: e.Allow}, nil
}

// EffectiveRateLimits are the limits a key is held to (in its bundle, and
// by the lease endpoint, which reads them itself): for each member the
// lower of its own and its workspace's, or whichever is set. Taking the
// minimum here, rather than refusing a workspace limit below its keys', is
// what lets a workspace be tightened at once without editing every key.
func EffectiveRateLimits(key, ws store.RateLimits) store.RateLimits {
	return store.RateLimits{RPM: lower(key.RPM, ws.RPM), TPM: lower(key.TPM, ws.TPM)}
}

func lower(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil || *a <= *b:
		return a
	}
	return b
}

func bundleRateLimits(l store.RateLimits) *bundle.RateLimits {
	if l.RPM == nil && l.TPM == nil {
		return nil
	}
	out := &bundle.RateLimits{}
	if l.RPM != nil {
		out.RequestsPerMinute = *l.RPM
	}
	if l.TPM != nil {
		out.TokensPerMinute = *l.TPM
	}
	return out
}

func readPolicies(ctx context.Context, st *store.Store, orgID uuid.UUID, listed map[uuid.UUID]bool) ([]bundle.Policy, error) {
	rows, err := st.EnabledPoliciesForOrg(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	out := make([]bundle.Policy, 0, len(rows))
	for _, p := range rows {
		if !listed[p.WorkspaceID] {
			continue
		}
		// A definition that no longer parses stops the compile rather than
		// being left out: dropping a policy could drop a deny.
		def, err := policy.ParseDefinitionJSON([]byte(p.Definition))
		if err != nil {
			return nil, fmt.Errorf("policy %s (%q): stored definition does not parse: %w", p.ID, p.Name, err)
		}
		out = append(out, bundle.Policy{ID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name, Definition: def})
	}
	sortByID(out, func(p bundle.Policy) uuid.UUID { return p.ID })
	return out, nil
}

// readTagBudgets puts each tag budget whose policy the bundle carries
// (enabled, of a listed workspace) on its workspace.
func readTagBudgets(ctx context.Context, st *store.Store, body *bundle.Body) error {
	rows, err := st.ListOrgTagBudgets(ctx, body.OrgID)
	if err != nil {
		return fmt.Errorf("list tag budgets: %w", err)
	}
	carried := make(map[uuid.UUID]uuid.UUID, len(body.Policies))
	for _, p := range body.Policies {
		carried[p.ID] = p.WorkspaceID
	}
	at := make(map[uuid.UUID]int, len(body.Workspaces))
	for i, w := range body.Workspaces {
		at[w.ID] = i
	}
	for _, tb := range rows {
		ws, ok := carried[tb.PolicyID]
		if !ok || ws != tb.WorkspaceID {
			continue
		}
		w := &body.Workspaces[at[ws]]
		w.TagBudgets = append(w.TagBudgets, bundle.TagBudget{PolicyID: tb.PolicyID, TagKey: tb.TagKey, TagValue: tb.TagValue})
	}
	return nil
}

// readCredentials lists the platform credentials and the organization's
// own, each with the scope its row encodes: no organization is platform, an
// organization alone is org, both are workspace.
func readCredentials(ctx context.Context, st *store.Store, orgID uuid.UUID, listed map[uuid.UUID]bool) ([]bundle.Credential, error) {
	rows, err := st.CredentialsForOrg(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("list provider credentials: %w", err)
	}
	out := make([]bundle.Credential, 0, len(rows))
	for _, c := range rows {
		var scope policy.CredentialScope
		switch {
		case c.OrgID == nil && c.WorkspaceID == nil:
			scope = policy.ScopePlatform
		case c.OrgID != nil && c.WorkspaceID == nil:
			scope = policy.ScopeOrg
		case c.OrgID != nil:
			if !listed[*c.WorkspaceID] {
				continue
			}
			scope = policy.ScopeWorkspace
		default:
			return nil, fmt.Errorf("provider credential %s names a workspace but no organization", c.ID)
		}
		bc := bundle.Credential{
			ID: c.ID, Scope: scope, WorkspaceID: c.WorkspaceID, Provider: c.Provider,
			BaseURL: c.BaseURL, SecretSealed: c.SecretSealed,
		}
		if c.Settings != nil {
			bc.Settings = json.RawMessage(*c.Settings)
		}
		out = append(out, bc)
	}
	sortByID(out, func(c bundle.Credential) uuid.UUID { return c.ID })
	return out, nil
}

// sortByID orders by the id's bytes, which is also the order of its text.
// The store's ORDER BY is not used for this: the dialects order uuids
// differently, and the body must not depend on the database.
func sortByID[T any](items []T, id func(T) uuid.UUID) {
	slices.SortFunc(items, func(a, b T) int {
		ia, ib := id(a), id(b)
		return bytes.Compare(ia[:], ib[:])
	})
}

// utc normalizes a stored time, since drivers return times in the process's
// zone, and the body's bytes must not depend on where it was compiled.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// readAliases reads the organization's model aliases and its listed
// workspaces'; none is a nil list, which the body leaves out.
func readAliases(ctx context.Context, st *store.Store, orgID uuid.UUID, listed map[uuid.UUID]bool) ([]bundle.Alias, error) {
	rows, err := st.ModelAliasesForOrg(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("list model aliases: %w", err)
	}
	var out []bundle.Alias
	for _, a := range rows {
		if a.WorkspaceID != nil && !listed[*a.WorkspaceID] {
			continue
		}
		var ts []bundle.AliasTarget
		if err := json.Unmarshal([]byte(a.Targets), &ts); err != nil {
			return nil, fmt.Errorf("model alias %s: %w", a.ID, err)
		}
		out = append(out, bundle.Alias{ID: a.ID, WorkspaceID: a.WorkspaceID, Name: a.Name, Targets: ts})
	}
	sortByID(out, func(a bundle.Alias) uuid.UUID { return a.ID })
	return out, nil
}

// readGuardrails reads the organization's enabled guardrails and its
// listed workspaces'; none is a nil list, which the body leaves out. The
// stored definition has the bundle's shape, webhook secrets still sealed.
func readGuardrails(ctx context.Context, st *store.Store, orgID uuid.UUID, listed map[uuid.UUID]bool) ([]bundle.Guardrail, error) {
	rows, err := st.GuardrailsForOrg(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("list guardrails: %w", err)
	}
	var out []bundle.Guardrail
	for _, g := range rows {
		if !g.Enabled || (g.WorkspaceID != nil && !listed[*g.WorkspaceID]) {
			continue
		}
		var bg bundle.Guardrail
		if err := json.Unmarshal([]byte(g.Definition), &bg); err != nil {
			return nil, fmt.Errorf("guardrail %s: %w", g.ID, err)
		}
		bg.ID, bg.WorkspaceID, bg.Name = g.ID, g.WorkspaceID, g.Name
		out = append(out, bg)
	}
	sortByID(out, func(g bundle.Guardrail) uuid.UUID { return g.ID })
	return out, nil
}

// bundleTags is a key's tags as a bundle carries them: absent when none.
func bundleTags(t store.Tags) map[string]string {
	if len(t) == 0 {
		return nil
	}
	return map[string]string(t)
}

// bundleTagValues is a workspace's tag_values as a bundle carries them:
// absent when none.
func bundleTagValues(t store.TagValues) map[string][]string {
	if len(t) == 0 {
		return nil
	}
	return map[string][]string(t)
}

// bundleRequiredTags is a workspace's required tags as a bundle carries
// them: absent when none.
func bundleRequiredTags(s store.Strings) []string {
	if len(s) == 0 {
		return nil
	}
	return []string(s)
}

// readMCP reads the organization's enabled MCP servers and its listed
// workspaces', and their enabled tool policies (issue 30); none is a nil
// list, which the body leaves out.
func readMCP(ctx context.Context, st *store.Store, body *bundle.Body, listed map[uuid.UUID]bool) error {
	servers, err := st.MCPServersForOrg(ctx, body.OrgID)
	if err != nil {
		return fmt.Errorf("list MCP servers: %w", err)
	}
	for _, m := range servers {
		if !m.Enabled || (m.WorkspaceID != nil && !listed[*m.WorkspaceID]) {
			continue
		}
		bs := bundle.MCPServer{ID: m.ID, WorkspaceID: m.WorkspaceID, Name: m.Name, URL: m.URL, Auth: json.RawMessage(m.Auth)}
		if m.SecretSealed != nil {
			bs.SecretSealed = *m.SecretSealed
		}
		if m.Tools != nil {
			var f toolpolicy.Filter
			if err := json.Unmarshal([]byte(*m.Tools), &f); err != nil {
				return fmt.Errorf("MCP server %s tools: %w", m.ID, err)
			}
			bs.Tools = &f
		}
		if m.Prices != nil {
			if err := json.Unmarshal([]byte(*m.Prices), &bs.Prices); err != nil {
				return fmt.Errorf("MCP server %s prices: %w", m.ID, err)
			}
		}
		body.MCPServers = append(body.MCPServers, bs)
	}
	sortByID(body.MCPServers, func(m bundle.MCPServer) uuid.UUID { return m.ID })
	policies, err := st.EnabledToolPoliciesForOrg(ctx, body.OrgID)
	if err != nil {
		return fmt.Errorf("list tool policies: %w", err)
	}
	for _, p := range policies {
		if !listed[p.WorkspaceID] {
			continue
		}
		var def toolpolicy.Definition
		if err := json.Unmarshal([]byte(p.Definition), &def); err != nil {
			return fmt.Errorf("tool policy %s: %w", p.ID, err)
		}
		body.ToolPolicies = append(body.ToolPolicies, bundle.ToolPolicy{ID: p.ID, WorkspaceID: p.WorkspaceID, Name: p.Name, Definition: def})
	}
	sortByID(body.ToolPolicies, func(p bundle.ToolPolicy) uuid.UUID { return p.ID })
	return nil
}

// bundleArchive is a workspace's archive as a bundle carries it: only
// when enabled, the secret still sealed with the master key.
func bundleArchive(a *store.Archive) *bundle.Archive {
	if a == nil || !a.Enabled {
		return nil
	}
	return &bundle.Archive{Endpoint: a.Endpoint, Region: a.Region, Bucket: a.Bucket, Prefix: a.Prefix, PathStyle: a.PathStyle,
		AccessKeyID: a.AccessKeyID, SecretSealed: a.SecretSealed, Include: append([]string{}, a.Include...)}
}
