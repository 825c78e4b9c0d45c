package bundletest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/policy"
)

// Scale sizes a synthetic organization.
type Scale struct {
	Models     int // catalog size: the default catalog plus generated models
	Keys       int
	Policies   int
	Workspaces int
	Users      int
}

// Benchmark is the scale the data-plane benchmarks are quoted at.
var Benchmark = Scale{Models: 500, Keys: 10_000, Policies: 200, Workspaces: 20, Users: 1_000}

// Synthetic is a generated organization: its bundle body and the plaintext
// tokens of its keys, Tokens[i] belonging to Body.Keys[i].
type Synthetic struct {
	Body   *bundle.Body
	Tokens []string
	// Users are the organization's members, all active.
	Users []uuid.UUID
}

// NewSynthetic generates an organization at the given scale. The same seed
// gives the same organization. Its policies mix every kind discovery
// applies (allowlists, price ceilings, denies, credential access) with
// inference-only ones, on workspace, selected-key and selected-user targets,
// so keys fall into many groups of differing visible models.
func NewSynthetic(seed uint64, sc Scale) (*Synthetic, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6777))
	newID := func() uuid.UUID {
		var id uuid.UUID
		for i := range id {
			id[i] = byte(rng.Uint32())
		}
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
		return id
	}
	cat, err := SyntheticCatalog(sc.Models)
	if err != nil {
		return nil, err
	}
	s := &Synthetic{Body: &bundle.Body{
		Format: bundle.Format, OrgID: newID(), Version: 1, CompiledAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Workspaces: []bundle.Workspace{}, Keys: []bundle.Key{}, Policies: []bundle.Policy{},
		Catalog: *cat, Credentials: []bundle.Credential{},
	}}
	b := s.Body
	for i := range sc.Workspaces {
		b.Workspaces = append(b.Workspaces, bundle.Workspace{ID: newID(), Slug: fmt.Sprintf("ws-%02d", i), Name: fmt.Sprintf("Workspace %d", i)})
	}
	for range sc.Users {
		s.Users = append(s.Users, newID())
	}
	keysOf := make([][]bundle.Key, sc.Workspaces)
	tokenOf := map[uuid.UUID]string{}
	far := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range sc.Keys {
		token := fmt.Sprintf("%ssynthetic-%08d-%016x", auth.InferenceKeyPrefix, i, rng.Uint64())
		k := bundle.Key{ID: newID(), WorkspaceID: b.Workspaces[i%sc.Workspaces].ID, OwnerID: s.Users[i%sc.Users], TokenHash: auth.HashToken(token)}
		if i%10 == 0 {
			k.ExpiresAt = &far
		}
		tokenOf[k.ID] = token
		keysOf[i%sc.Workspaces] = append(keysOf[i%sc.Workspaces], k)
		b.Keys = append(b.Keys, k)
	}
	for j := range sc.Policies {
		w := j % sc.Workspaces
		def := syntheticDefinition(j/sc.Workspaces, rng, cat, keysOf[w], s.Users)
		b.Policies = append(b.Policies, bundle.Policy{ID: newID(), WorkspaceID: b.Workspaces[w].ID, Name: fmt.Sprintf("policy-%03d", j), Definition: def})
	}
	b.Credentials = syntheticCredentials(newID, b.Workspaces)

	byID := func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) }
	slices.SortFunc(b.Workspaces, func(x, y bundle.Workspace) int { return byID(x.ID, y.ID) })
	slices.SortFunc(b.Keys, func(x, y bundle.Key) int { return byID(x.ID, y.ID) })
	slices.SortFunc(b.Policies, func(x, y bundle.Policy) int { return byID(x.ID, y.ID) })
	slices.SortFunc(b.Credentials, func(x, y bundle.Credential) int { return byID(x.ID, y.ID) })
	for _, k := range b.Keys {
		s.Tokens = append(s.Tokens, tokenOf[k.ID])
	}
	return s, nil
}

// syntheticCredentials: openai and anthropic on the platform, google and
// mistral for the organization, groq in every other workspace; deepseek
// and openai-compatible have none, so their models are never listed.
func syntheticCredentials(newID func() uuid.UUID, workspaces []bundle.Workspace) []bundle.Credential {
	sealed := "v1.test.c2VhbGVk"
	out := []bundle.Credential{
		{ID: newID(), Scope: policy.ScopePlatform, Provider: "openai", SecretSealed: sealed},
		{ID: newID(), Scope: policy.ScopePlatform, Provider: "anthropic", SecretSealed: sealed},
		{ID: newID(), Scope: policy.ScopeOrg, Provider: "google", SecretSealed: sealed},
		{ID: newID(), Scope: policy.ScopeOrg, Provider: "mistral", SecretSealed: sealed},
	}
	for i, w := range workspaces {
		if i%2 == 0 {
			ws := w.ID
			out = append(out, bundle.Credential{ID: newID(), Scope: policy.ScopeWorkspace, WorkspaceID: &ws, Provider: "groq", SecretSealed: sealed})
		}
	}
	return out
}

// syntheticDefinition is the kind-th policy of a workspace: ten kinds in
// rotation, half of them targeting subsets of the workspace's keys or users.
func syntheticDefinition(kind int, rng *rand.Rand, cat *catalog.Catalog, keys []bundle.Key, users []uuid.UUID) policy.Definition {
	all := func(a policy.Action) policy.Rule {
		return policy.Rule{Match: policy.Match{Kind: policy.MatchAllRequests}, Action: a}
	}
	workspace := policy.Target{Kind: policy.TargetWorkspace}
	someKeys := func(n int) policy.Target {
		t := policy.Target{Kind: policy.TargetSelectedKeys}
		for _, i := range rng.Perm(len(keys))[:min(n, len(keys))] {
			t.KeyIDs = append(t.KeyIDs, keys[i].ID.String())
		}
		return t
	}
	someUsers := func(n int) policy.Target {
		t := policy.Target{Kind: policy.TargetSelectedUsers}
		for _, i := range rng.Perm(len(users))[:min(n, len(users))] {
			t.UserIDs = append(t.UserIDs, users[i])
		}
		return t
	}
	someModels := func(n int) []string {
		var ids []string
		for _, i := range rng.Perm(len(cat.Models))[:min(n, len(cat.Models))] {
			ids = append(ids, cat.Models[i].ID)
		}
		return ids
	}
	priceLimit := func(in, out string) policy.Action {
		return policy.Action{Kind: policy.ActionPriceLimit, MaxInputPricePerMTok: policy.MustDecimal(in), MaxOutputPricePerMTok: policy.MustDecimal(out)}
	}
	yes := true
	switch kind % 10 {
	case 0:
		return policy.Definition{Target: workspace, Rules: []policy.Rule{all(policy.Action{Kind: policy.ActionProviders, Names: []string{"anthropic", "google", "groq", "mistral", "openai"}})}}
	case 1:
		return policy.Definition{Target: workspace, Rules: []policy.Rule{all(priceLimit("15", "60"))}}
	case 2:
		return policy.Definition{Target: workspace, Rules: []policy.Rule{{
			Match:  policy.Match{Kind: policy.MatchRequest, Models: someModels(5), Capabilities: []policy.Capability{}},
			Action: policy.Action{Kind: policy.ActionDeny, Message: "this model is not for this workspace"},
		}}}
	case 3:
		return policy.Definition{Target: workspace, Rules: []policy.Rule{
			{Match: policy.Match{Kind: policy.MatchRequest, Models: []string{}, Stream: &yes, Capabilities: []policy.Capability{}},
				Action: policy.Action{Kind: policy.ActionDeny, Message: "no streaming"}},
			all(policy.Action{Kind: policy.ActionRequestLimits, MaxOutputTokens: 4096}),
			all(policy.Action{Kind: policy.ActionStrictParameters}),
			all(policy.Action{Kind: policy.ActionFallback, Models: []string{"openai/gpt-4o-mini"}, On: []policy.FallbackTrigger{policy.TriggerTimeout}, MaxAttempts: 2, TimeoutMS: 1000}),
		}}
	case 4:
		return policy.Definition{Target: someKeys(50), Rules: []policy.Rule{all(policy.Action{Kind: policy.ActionModels, Names: someModels(100)})}}
	case 5:
		return policy.Definition{Target: someKeys(20), Rules: []policy.Rule{all(policy.Action{Kind: policy.ActionDeny, Message: "suspended for review"})}}
	case 6:
		return policy.Definition{Target: someUsers(20), Rules: []policy.Rule{all(policy.Action{Kind: policy.ActionCredentialAccess, Scopes: []policy.CredentialScope{policy.ScopeOrg, policy.ScopeWorkspace}})}}
	case 7:
		return policy.Definition{Target: someUsers(10), Rules: []policy.Rule{all(priceLimit("1", "4"))}}
	case 8:
		return policy.Definition{Target: workspace, Rules: []policy.Rule{
			all(policy.Action{Kind: policy.ActionCredentialAccess, Scopes: []policy.CredentialScope{policy.ScopePlatform, policy.ScopeOrg, policy.ScopeWorkspace}}),
			all(policy.Action{Kind: policy.ActionBudget, AmountUSD: policy.MustDecimal("500"), Period: policy.PeriodMonth, Aggregation: policy.AggregationShared}),
		}}
	default:
		return policy.Definition{Target: someKeys(30), Rules: []policy.Rule{all(policy.Action{Kind: policy.ActionProviders, Names: []string{"openai"}})}}
	}
}

// SyntheticCatalog is the default catalog grown to n models (or the default
// alone when n is smaller), the added ones spread over its providers with
// varied prices and capabilities.
func SyntheticCatalog(n int) (*catalog.Catalog, error) {
	def, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	models := def.Models
	prices := []catalog.Pricing{
		{InputPerMTok: "0.10", OutputPerMTok: "0.40", CacheReadPerMTok: "0.025", CacheWritePerMTok: "0.10"},
		{InputPerMTok: "0.80", OutputPerMTok: "3.20", CacheReadPerMTok: "0.20", CacheWritePerMTok: "1.00"},
		{InputPerMTok: "3", OutputPerMTok: "15", CacheReadPerMTok: "0.30", CacheWritePerMTok: "3.75"},
		{InputPerMTok: "15", OutputPerMTok: "75", CacheReadPerMTok: "1.50", CacheWritePerMTok: "18.75"},
	}
	caps := [][]catalog.Capability{
		{catalog.CapabilityStreaming},
		{catalog.CapabilityStreaming, catalog.CapabilityTools},
		{catalog.CapabilityStreaming, catalog.CapabilityTools, catalog.CapabilityReasoning, catalog.CapabilityStructuredOutput},
	}
	for i := 0; len(models) < n; i++ {
		p := def.Providers[i%len(def.Providers)]
		models = append(models, catalog.Model{
			ID: fmt.Sprintf("%s/synthetic-%04d", p.ID, i), Provider: p.ID, Name: fmt.Sprintf("Synthetic %d", i),
			ContextWindow: 128_000, MaxOutputTokens: 8_192, Pricing: prices[i%len(prices)],
			Capabilities: caps[i%len(caps)], Modalities: []catalog.Modality{catalog.ModalityText, catalog.ModalityImage},
			Created: 1_700_000_000 + int64(i)*86_400,
		})
	}
	return catalog.New(def.Providers, models)
}
