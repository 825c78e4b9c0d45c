package dataplane

import (
	"encoding/json"
	"github.com/gw-gateway/gw/server/guardrails"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/ratelimit"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/tags"
)

// inferenceOrg is what chat completions need of one admitted bundle beyond
// discovery's views: the catalog by model id with each model's upstream,
// the credentials by scope and provider, and each workspace's policies.
// Like the rest of the runtime index it is built once at admission and
// only read afterwards, except for the secrets it opens on first use.
type inferenceOrg struct {
	orgID uuid.UUID
	// orgIDString is orgID as text, made once (the metrics' and the access
	// log's label).
	orgIDString string
	// guards are the bundle's guardrails, compiled (guard.go).
	guards guardIndex
	// archives are the workspaces' payload archives (archive.go).
	archives map[uuid.UUID]*bundle.Archive
	// responseCaches are the workspaces' response cache settings (cache.go).
	responseCaches map[uuid.UUID]*bundle.ResponseCache
	// promptCaches are the workspaces' prompt-cache injections
	// (promptcache.go).
	promptCaches map[uuid.UUID]*bundle.PromptCache
	// version is the bundle's, recorded in each usage event's provenance.
	version     int64
	models      map[string]*routeModel
	credentials *credentialSet
	policies    map[uuid.UUID][]policy.Policy
	// requiredTags are each workspace's required tag keys, tagRules what
	// it holds a request's X-Gw-Tags header to.
	requiredTags map[uuid.UUID][]string
	tagRules     map[uuid.UUID]tags.Rules
	// mcp is what the bundle says of MCP servers and tool policies.
	mcp *mcpOrg
}

// routeModel is a catalog model with what routing needs at hand.
type routeModel struct {
	model catalog.Model
	kind  catalog.Kind
	// baseURL is the provider's API root; a credential's own URL wins.
	baseURL       string
	input, output decimal.Decimal
	// pricing prices the usage event of each request, parsed once here.
	pricing catalog.ParsedPricing
	// bound prices a request's cost bound for budgets, without decimals;
	// tierBounds, for a request that asks for a service tier the catalog
	// prices, the dearer of the base and that tier (boundFor).
	bound      boundPrices
	tierBounds map[string]boundPrices
	// upstreamJSON and idJSON are the model's upstream id and its id as
	// JSON strings, made once for every call (providers.Call).
	upstreamJSON, idJSON []byte
	// idHeader is the model's id as the value of X-Gw-Model, made once
	// for every answer (setAttemptHeaders); shared, so capped at its
	// length: an Add to it copies.
	idHeader []string
}

// boundFor is the bound's prices for a request asking for tier ("" for
// none): the dearest of the classes it can be billed at.
func (m *routeModel) boundFor(tier string) boundPrices {
	if b, ok := m.tierBounds[tier]; ok {
		return b
	}
	return m.bound
}

// inferenceKey is an inference key as a chat completion needs it.
type inferenceKey struct {
	org       *inferenceOrg
	id        uuid.UUID
	idString  string // policy targets name keys by their id as a string
	workspace uuid.UUID
	// workspaceString is workspace as text, made once (a label, as
	// orgIDString).
	workspaceString string
	owner           uuid.UUID
	// policies are the key's workspace's; Evaluate applies their targets.
	policies []policy.Policy
	// limits are the key's effective rate limits (ratelimit.go).
	limits ratelimit.Limits
	// tags are the key's own cost-centre tags, which win over a request's;
	// required the tag keys its workspace requires on every request.
	tags     map[string]string
	required []string
	// playground: the key made up for a user's playground requests
	// (playground.go); id is playground.KeyID, owner the user.
	playground bool
	// oauthGrant is the OAuth grant whose access token the request came
	// with (oauth.go), uuid.Nil for a key's: its usage event names no
	// inference key.
	oauthGrant uuid.UUID
	tagRules   tags.Rules
	// guards are the guardrails that apply to the key: its organization's
	// and its workspace's whose target covers it (guard.go).
	guards guardrails.Set
	// decisions are the key's policy decisions taken on this bundle
	// (decisions.go); nil for a key made up per request.
	decisions *decisionCache
}

// newInferenceOrg builds the inference index of a bundle; models is the
// bundle's catalog as prepareModels parsed it, in the same order.
func newInferenceOrg(b *bundle.Body, models []catalogModel) *inferenceOrg {
	o := &inferenceOrg{
		orgID:        b.OrgID,
		orgIDString:  b.OrgID.String(),
		version:      b.Version,
		models:       make(map[string]*routeModel, len(models)),
		credentials:  newCredentialSet(b.Credentials),
		policies:     map[uuid.UUID][]policy.Policy{},
		requiredTags: map[uuid.UUID][]string{},
		tagRules:     map[uuid.UUID]tags.Rules{},
		guards:       newGuardIndex(b.Guardrails),
		mcp:          newMCPOrg(b),
		archives:     map[uuid.UUID]*bundle.Archive{},
	}
	tagBudgets := map[uuid.UUID]bundle.TagBudget{}
	for _, w := range b.Workspaces {
		if w.Archive != nil {
			o.archives[w.ID] = w.Archive
		}
		if w.ResponseCache != nil {
			if o.responseCaches == nil {
				o.responseCaches = map[uuid.UUID]*bundle.ResponseCache{}
			}
			o.responseCaches[w.ID] = w.ResponseCache
		}
		if w.PromptCache != nil {
			if o.promptCaches == nil {
				o.promptCaches = map[uuid.UUID]*bundle.PromptCache{}
			}
			o.promptCaches[w.ID] = w.PromptCache
		}
		if len(w.RequiredTags) > 0 {
			o.requiredTags[w.ID] = w.RequiredTags
		}
		if len(w.TagValues) == 0 && len(w.TagBudgets) == 0 {
			continue
		}
		r := tags.Rules{Values: w.TagValues, Governed: map[string]bool{}}
		for _, tb := range w.TagBudgets {
			r.Governed[tb.TagKey] = true
			tagBudgets[tb.PolicyID] = tb
		}
		o.tagRules[w.ID] = r
	}
	catalogProviders := make(map[string]catalog.Provider, len(b.Catalog.Providers))
	for _, p := range b.Catalog.Providers {
		catalogProviders[p.ID] = p
	}
	for i, m := range b.Catalog.Models {
		p := catalogProviders[m.Provider]
		// Verification already checked every price (catalog.New), so
		// parsing cannot fail here.
		pricing, _ := m.Pricing.Parse()
		o.models[m.ID] = &routeModel{model: m, kind: p.Kind, baseURL: p.BaseURL, input: models[i].input, output: models[i].output,
			pricing: pricing, bound: boundPricesOf(pricing.Asked("")),
			upstreamJSON: providers.ModelIDJSON(m.UpstreamModel()), idJSON: providers.ModelIDJSON(m.ID),
			idHeader: []string{m.ID}[:1:1]}
		for _, tier := range catalog.ServiceTierNames() {
			if pricing.ForServiceTier(tier).ServiceTier() != tier {
				continue
			}
			if o.models[m.ID].tierBounds == nil {
				o.models[m.ID].tierBounds = map[string]boundPrices{}
			}
			o.models[m.ID].tierBounds[tier] = boundPricesOf(pricing.Asked(tier))
		}
	}
	for _, p := range b.Policies {
		def := p.Definition
		if tb, ok := tagBudgets[p.ID]; ok {
			def.Target = tagTarget(tb, p.WorkspaceID, b.Keys)
		}
		// A bundle carries enabled policies only.
		o.policies[p.WorkspaceID] = append(o.policies[p.WorkspaceID], policy.Policy{ID: p.ID, Name: p.Name, Enabled: true, Definition: def})
	}
	return o
}

// tagTarget is the target a tag budget's policy applies to at inference:
// the workspace's keys whose tags carry the budget's tag. A request's
// header cannot give a governed tag another value than its key's
// (tags.Rules), so these are exactly the requests whose tags carry it:
// the budget counts what the report by that tag shows, whatever the
// policy's stored key list says (a hand edit is undone only at the next
// key change).
func tagTarget(tb bundle.TagBudget, ws uuid.UUID, keys []bundle.Key) policy.Target {
	t := policy.Target{Kind: policy.TargetSelectedKeys, KeyIDs: []string{"tag:" + tb.TagKey + "=" + tb.TagValue}}
	for _, k := range keys {
		if k.WorkspaceID == ws && k.Tags[tb.TagKey] == tb.TagValue {
			t.KeyIDs = append(t.KeyIDs, k.ID.String())
		}
	}
	return t
}

func (o *inferenceOrg) key(k bundle.Key) *inferenceKey {
	return &inferenceKey{org: o, id: k.ID, idString: k.ID.String(), workspace: k.WorkspaceID, workspaceString: k.WorkspaceID.String(),
		owner: k.OwnerID, policies: o.policies[k.WorkspaceID],
		limits: keyLimits(k.RateLimits), tags: k.Tags, required: o.requiredTags[k.WorkspaceID], tagRules: o.tagRules[k.WorkspaceID],
		guards: o.guardsFor(k), decisions: new(decisionCache)}
}

// upstreamCredential is a provider credential of the bundle. Its secret
// stays sealed until a request needs it; it is then opened once and kept
// for as long as this bundle is in force. A new bundle builds new
// credentials, so a rotated or revoked secret is never served from here:
// the cache is keyed, in effect, by credential id and sealed value.
type upstreamCredential struct {
	id uuid.UUID
	// idString is id as adapters remember an upstream's quirks by it.
	idString string
	scope    policy.CredentialScope
	baseURL  string
	sealed   string
	// settings are the credential's non-secret settings (region,
	// project, location, api-version, deployments).
	settings providers.Settings

	once   sync.Once
	secret string
	err    error
}

// open returns the plaintext secret.
func (c *upstreamCredential) open(kr SecretOpener) (string, error) {
	c.once.Do(func() {
		pt, err := kr.Open(c.sealed, secrets.CredentialAAD(c.id))
		c.secret, c.err = string(pt), err
	})
	return c.secret, c.err
}

// credentialSet indexes credentials by scope and provider; within one
// scope and provider they are in id order (bundles sort them), and the
// first is used.
type credentialSet struct {
	platform, org map[string][]*upstreamCredential
	workspace     map[uuid.UUID]map[string][]*upstreamCredential
}

func newCredentialSet(creds []bundle.Credential) *credentialSet {
	s := &credentialSet{platform: map[string][]*upstreamCredential{}, org: map[string][]*upstreamCredential{},
		workspace: map[uuid.UUID]map[string][]*upstreamCredential{}}
	for _, c := range creds {
		uc := &upstreamCredential{id: c.ID, idString: c.ID.String(), scope: c.Scope, sealed: c.SecretSealed}
		if c.BaseURL != nil {
			uc.baseURL = strings.TrimRight(*c.BaseURL, "/")
		}
		if len(c.Settings) > 0 {
			// Verified with the bundle; settings that do not read leave
			// the adapter to report what is missing.
			_ = json.Unmarshal(c.Settings, &uc.settings)
		}
		switch c.Scope {
		case policy.ScopePlatform:
			s.platform[c.Provider] = append(s.platform[c.Provider], uc)
		case policy.ScopeOrg:
			s.org[c.Provider] = append(s.org[c.Provider], uc)
		case policy.ScopeWorkspace:
			byProvider := s.workspace[*c.WorkspaceID]
			if byProvider == nil {
				byProvider = map[string][]*upstreamCredential{}
				s.workspace[*c.WorkspaceID] = byProvider
			}
			byProvider[c.Provider] = append(byProvider[c.Provider], uc)
		}
	}
	return s
}

// eligible lists the scopes in which a key of workspace ws finds a
// credential for provider, in platform, org, workspace order (what
// policy.Request.CredentialScopes wants).
func (s *credentialSet) eligible(ws uuid.UUID, provider string) []policy.CredentialScope {
	var out []policy.CredentialScope
	if len(s.platform[provider]) > 0 {
		out = append(out, policy.ScopePlatform)
	}
	if len(s.org[provider]) > 0 {
		out = append(out, policy.ScopeOrg)
	}
	if len(s.workspace[ws][provider]) > 0 {
		out = append(out, policy.ScopeWorkspace)
	}
	return out
}

// pick chooses the credential to call provider with among the allowed
// scopes, the narrowest first: a workspace's own credential, then the
// organization's, then the platform's. An operator who gives a workspace
// its own key means that workspace to use it.
func (s *credentialSet) pick(ws uuid.UUID, provider string, allowed []policy.CredentialScope) *upstreamCredential {
	for _, scope := range []policy.CredentialScope{policy.ScopeWorkspace, policy.ScopeOrg, policy.ScopePlatform} {
		if !slices.Contains(allowed, scope) {
			continue
		}
		var list []*upstreamCredential
		switch scope {
		case policy.ScopeWorkspace:
			list = s.workspace[ws][provider]
		case policy.ScopeOrg:
			list = s.org[provider]
		case policy.ScopePlatform:
			list = s.platform[provider]
		}
		if len(list) > 0 {
			return list[0]
		}
	}
	return nil
}
