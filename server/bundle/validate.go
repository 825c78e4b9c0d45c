package bundle

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/gw-gateway/gw/server/guardrails"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/tags"
)

// validate checks what the JSON decoder cannot: the format, the catalog's
// own rules, and that every reference points into the bundle. Compile runs
// it before signing, so the control plane never stores a bundle its data
// planes would refuse.
func (b *Body) Validate() error {
	if b.Format != Format {
		return invalid("format %d is not supported (this build reads format %d)", b.Format, Format)
	}
	if b.OrgID == uuid.Nil {
		return invalid("org_id is missing")
	}
	if b.Version < 1 {
		return invalid("version %d is not positive", b.Version)
	}
	if b.CompiledAt.IsZero() {
		return invalid("compiled_at is missing")
	}
	if b.Workspaces == nil || b.Keys == nil || b.Policies == nil || b.Credentials == nil {
		return invalid("workspaces, keys, policies and credentials must all be lists")
	}
	workspaces := make(map[uuid.UUID]bool, len(b.Workspaces))
	limits := make(map[uuid.UUID]*RateLimits, len(b.Workspaces))
	for _, w := range b.Workspaces {
		if w.ID == uuid.Nil || workspaces[w.ID] {
			return invalid("workspace id %s is missing or repeated", w.ID)
		}
		if err := w.RateLimits.validate(); err != nil {
			return invalid("workspace %s: %v", w.ID, err)
		}
		if w.RequiredTags != nil && len(w.RequiredTags) == 0 || len(w.RequiredTags) > tags.MaxPairs {
			return invalid("workspace %s: required_tags is empty or longer than %d", w.ID, tags.MaxPairs)
		}
		for _, k := range w.RequiredTags {
			if m := tags.CheckKey(k); m != "" {
				return invalid("workspace %s: required tag %q: %s", w.ID, k, m)
			}
		}
		if w.TagValues != nil && len(w.TagValues) == 0 {
			return invalid("workspace %s: tag_values is empty", w.ID)
		}
		if ps := tags.CheckValues(w.TagValues); len(ps) > 0 {
			return invalid("workspace %s: tag_values %s: %s", w.ID, ps[0].Key, ps[0].Msg)
		}
		if w.TagBudgets != nil && len(w.TagBudgets) == 0 {
			return invalid("workspace %s: tag_budgets is empty", w.ID)
		}
		workspaces[w.ID] = true
		limits[w.ID] = w.RateLimits
	}
	if err := validateKeys(b.Keys, workspaces); err != nil {
		return err
	}
	if err := validateKeyLimits(b.Keys, limits); err != nil {
		return err
	}
	if err := validatePolicies(b.Policies, workspaces); err != nil {
		return err
	}
	if err := validateTagBudgets(b.Workspaces, b.Policies); err != nil {
		return err
	}
	if err := validateCredentials(b.Credentials, workspaces); err != nil {
		return err
	}
	if err := validateAliases(b.Aliases, workspaces); err != nil {
		return err
	}
	if err := validateGuardrails(b.Guardrails, workspaces); err != nil {
		return err
	}
	if err := validateOAuthGrants(b.OAuthGrants, workspaces); err != nil {
		return err
	}
	if err := b.Egress.validate(); err != nil {
		return err
	}
	// The catalog is rebuilt through catalog.New, which enforces every rule
	// an imported catalog file meets and leaves it sorted for lookups.
	c, err := catalog.New(b.Catalog.Providers, b.Catalog.Models)
	if err != nil {
		return invalid("%v", err)
	}
	b.Catalog = *c
	return nil
}

func validateOAuthGrants(grants []OAuthGrant, workspaces map[uuid.UUID]bool) error {
	if grants != nil && len(grants) == 0 {
		return invalid("oauth_grants is empty; a bundle without grants has none")
	}
	ids := make(map[uuid.UUID]bool, len(grants))
	for _, g := range grants {
		switch {
		case g.ID == uuid.Nil || ids[g.ID]:
			return invalid("oauth grant id %s is missing or repeated", g.ID)
		case !workspaces[g.WorkspaceID]:
			return invalid("oauth grant %s belongs to workspace %s, which the bundle does not list", g.ID, g.WorkspaceID)
		case g.OwnerID == uuid.Nil:
			return invalid("oauth grant %s has no owner", g.ID)
		}
		ids[g.ID] = true
	}
	return nil
}

func validateKeys(keys []Key, workspaces map[uuid.UUID]bool) error {
	ids := make(map[uuid.UUID]bool, len(keys))
	hashes := make(map[string]bool, len(keys))
	for _, k := range keys {
		switch {
		case k.ID == uuid.Nil || ids[k.ID]:
			return invalid("key id %s is missing or repeated", k.ID)
		case !workspaces[k.WorkspaceID]:
			return invalid("key %s belongs to workspace %s, which the bundle does not list", k.ID, k.WorkspaceID)
		case k.OwnerID == uuid.Nil:
			return invalid("key %s has no owner", k.ID)
		case k.BatchesOnly && (k.TokenHash != "" || k.ExpiresAt != nil || k.RateLimits != nil):
			return invalid("key %s is for batches only and admits no request: it has no token hash, expiry or rate limits", k.ID)
		case !k.BatchesOnly && (!isTokenHash(k.TokenHash) || hashes[k.TokenHash]):
			return invalid("key %s has a malformed or repeated token hash", k.ID)
		case k.Tags != nil && len(k.Tags) == 0:
			return invalid("key %s has an empty tags object; a key without tags has none", k.ID)
		}
		if p := tags.Check(k.Tags); len(p) > 0 {
			return invalid("key %s has a tag the rules refuse: %s %s", k.ID, p[0].Key, p[0].Msg)
		}
		ids[k.ID] = true
		if !k.BatchesOnly {
			hashes[k.TokenHash] = true
		}
	}
	return nil
}

// validate checks that every member is at least 1 and that an object is
// not empty (no limits is an absent object, so equal content encodes to
// equal bytes).
func (l *RateLimits) validate() error {
	switch {
	case l == nil:
		return nil
	case l.RequestsPerMinute < 0 || l.TokensPerMinute < 0:
		return fmt.Errorf("rate limits %+v are negative", *l)
	case l.RequestsPerMinute == 0 && l.TokensPerMinute == 0:
		return fmt.Errorf("rate_limits is present but empty")
	}
	return nil
}

// validateKeyLimits checks that a key's effective limits are well formed
// and within its workspace's: the compiler takes the lower of the two, so
// a key above its workspace is a bundle that was not compiled by it.
func validateKeyLimits(keys []Key, workspaces map[uuid.UUID]*RateLimits) error {
	for _, k := range keys {
		if err := k.RateLimits.validate(); err != nil {
			return invalid("key %s: %v", k.ID, err)
		}
		ws := workspaces[k.WorkspaceID]
		if ws == nil || k.BatchesOnly {
			// A batches-only key admits no request to limit.
			continue
		}
		if k.RateLimits == nil || exceeds(k.RateLimits.RequestsPerMinute, ws.RequestsPerMinute) ||
			exceeds(k.RateLimits.TokensPerMinute, ws.TokensPerMinute) {
			return invalid("key %s has rate limits above its workspace's", k.ID)
		}
	}
	return nil
}

// exceeds reports whether a key's limit is above the workspace's ceiling
// (0 is none: no key limit is above no ceiling, and none is above any).
func exceeds(key, ceiling int64) bool {
	return ceiling > 0 && (key == 0 || key > ceiling)
}

// isTokenHash reports whether s is what auth.HashToken produces: 64
// lower-case hex digits.
func isTokenHash(s string) bool {
	if len(s) != 64 || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func validatePolicies(policies []Policy, workspaces map[uuid.UUID]bool) error {
	ids := make(map[uuid.UUID]bool, len(policies))
	for _, p := range policies {
		switch {
		case p.ID == uuid.Nil || ids[p.ID]:
			return invalid("policy id %s is missing or repeated", p.ID)
		case !workspaces[p.WorkspaceID]:
			return invalid("policy %s belongs to workspace %s, which the bundle does not list", p.ID, p.WorkspaceID)
		case p.Name == "":
			return invalid("policy %s has no name", p.ID)
		// A parsed definition always has a target and at least one rule;
		// a zero one means the member was absent.
		case p.Definition.Target.Kind == "" || len(p.Definition.Rules) == 0:
			return invalid("policy %s has no definition", p.ID)
		}
		ids[p.ID] = true
	}
	return nil
}

func validateCredentials(creds []Credential, workspaces map[uuid.UUID]bool) error {
	ids := make(map[uuid.UUID]bool, len(creds))
	for _, c := range creds {
		if c.ID == uuid.Nil || ids[c.ID] {
			return invalid("credential id %s is missing or repeated", c.ID)
		}
		ids[c.ID] = true
		if c.Provider == "" || c.SecretSealed == "" {
			return invalid("credential %s lacks a provider or a secret", c.ID)
		}
		if len(c.Settings) > 0 && (c.Settings[0] != '{' || !json.Valid(c.Settings)) {
			return invalid("credential %s has settings that are not a JSON object", c.ID)
		}
		switch c.Scope {
		case policy.ScopePlatform, policy.ScopeOrg:
			if c.WorkspaceID != nil {
				return invalid("credential %s of scope %s names a workspace", c.ID, c.Scope)
			}
		case policy.ScopeWorkspace:
			if c.WorkspaceID == nil || !workspaces[*c.WorkspaceID] {
				return invalid("credential %s belongs to a workspace the bundle does not list", c.ID)
			}
		default:
			return invalid("credential %s has scope %q; want platform, org or workspace", c.ID, c.Scope)
		}
	}
	return nil
}

// validateAliases checks that aliases name a listed workspace, are unique
// per level, and have 1 to 8 targets weighing 1 to 100 each.
func validateAliases(aliases []Alias, workspaces map[uuid.UUID]bool) error {
	seen := make(map[string]bool, len(aliases))
	for _, a := range aliases {
		level := ""
		if a.WorkspaceID != nil {
			if !workspaces[*a.WorkspaceID] {
				return invalid("alias %s belongs to workspace %s, which the bundle does not list", a.ID, *a.WorkspaceID)
			}
			level = a.WorkspaceID.String()
		}
		if a.ID == uuid.Nil || a.Name == "" || strings.Contains(a.Name, "/") || seen[level+"\x00"+a.Name] {
			return invalid("alias %s: its name %q is missing, has a slash or is repeated", a.ID, a.Name)
		}
		seen[level+"\x00"+a.Name] = true
		if len(a.Targets) < 1 || len(a.Targets) > 8 {
			return invalid("alias %s has %d targets, not 1 to 8", a.ID, len(a.Targets))
		}
		for _, t := range a.Targets {
			if t.Model == "" || t.Weight < 1 || t.Weight > 100 {
				return invalid("alias %s: target %q weighs %d, not 1 to 100", a.ID, t.Model, t.Weight)
			}
		}
	}
	return nil
}

// validate checks an egress setting: a positive revision, lists of
// canonical ranges (a range a plane could not read would be a deny it
// silently drops).
func (e *Egress) validate() error {
	if e == nil {
		return nil
	}
	if e.Revision < 1 || e.Deny == nil || e.Allow == nil {
		return invalid("egress needs a positive revision and deny and allow lists")
	}
	for _, r := range slices.Concat(e.Deny, e.Allow) {
		if p, problem := egress.ParseRange(r); problem != "" || p.String() != r {
			return invalid("egress range %q is not a canonical CIDR range", r)
		}
	}
	return nil
}

// validateTagBudgets checks that each tag budget names a policy of its own
// workspace that the bundle carries, once, and a well-formed tag.
func validateTagBudgets(workspaces []Workspace, policies []Policy) error {
	wsOf := make(map[uuid.UUID]uuid.UUID, len(policies))
	for _, p := range policies {
		wsOf[p.ID] = p.WorkspaceID
	}
	seen := map[uuid.UUID]bool{}
	for _, w := range workspaces {
		for _, tb := range w.TagBudgets {
			if ws, ok := wsOf[tb.PolicyID]; !ok || ws != w.ID || seen[tb.PolicyID] {
				return invalid("workspace %s: tag budget policy %s is not one of its policies, or is repeated", w.ID, tb.PolicyID)
			}
			seen[tb.PolicyID] = true
			if m := tags.CheckKey(tb.TagKey); m != "" {
				return invalid("workspace %s: tag budget %s: %s", w.ID, tb.PolicyID, m)
			}
			if m := tags.CheckValue(tb.TagValue); m != "" {
				return invalid("workspace %s: tag budget %s: %s", w.ID, tb.PolicyID, m)
			}
		}
	}
	return nil
}

// validateGuardrails checks that guardrails name a listed workspace and
// that the core accepts each (every regex compiles here as it will).
func validateGuardrails(gs []Guardrail, workspaces map[uuid.UUID]bool) error {
	for _, g := range gs {
		if g.WorkspaceID != nil && !workspaces[*g.WorkspaceID] {
			return invalid("guardrail %s belongs to workspace %s, which the bundle does not list", g.ID, *g.WorkspaceID)
		}
		if _, err := guardrails.Compile(g.Spec()); err != nil {
			return invalid("%v", err)
		}
	}
	return nil
}
