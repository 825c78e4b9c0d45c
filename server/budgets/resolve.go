package budgets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/playground"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
)

// counterDef is a counter as the control plane's own store defines it:
// nothing of it comes from the data plane but the name.
type counterDef struct {
	name        string
	rate        bool
	period      spend.Period
	aggregation string
	orgID       uuid.UUID
	wsID        uuid.UUID
	// policyID is the policy's id; for a rate limit, the key's.
	policyID   uuid.UUID
	policyName string
	keyID      *uuid.UUID
	// playgroundUser is set for the counter of a user's playground
	// requests, which run without a key: keyID is then the id they
	// count under (playground.KeyID).
	playgroundUser *uuid.UUID
	limit          int64
	scope          seedScope
	// inexact are the rules' amounts that are not what is enforced (an
	// older version stored them finer than a nano-dollar or beyond int64
	// nano-dollars): the budget state warns about them.
	inexact []string
}

// seedScope says which usage events already recorded in a period count
// against a budget counter: its workspace's, narrowed to the policy's
// target (owners or keys, nil meaning no narrowing), the key of a per_key
// counter, and the models of its rules (none: every model).
type seedScope struct {
	ownerIDs, keyIDs []uuid.UUID
	models           []string
	// keyless keeps the events no inference key made: a user's
	// playground requests.
	keyless bool
}

// target narrows the scope to a policy's selected users or keys.
func (s *seedScope) target(t policy.Target) {
	switch t.Kind {
	case policy.TargetSelectedUsers:
		s.ownerIDs = append([]uuid.UUID{}, t.UserIDs...)
	case policy.TargetSelectedKeys:
		s.keyIDs = []uuid.UUID{}
		for _, k := range t.KeyIDs {
			if id, err := uuid.Parse(k); err == nil {
				s.keyIDs = append(s.keyIDs, id)
			}
		}
	}
}

// narrowing is the scope as a usage sum narrows to it.
func (s seedScope) narrowing() store.UsageNarrowing {
	return store.UsageNarrowing{OwnerIDs: s.ownerIDs, InferenceKeyIDs: s.keyIDs, Models: s.models, Keyless: s.keyless}
}

// Why a counter does not resolve, as the audit log records it.
const (
	reasonNotEnrolled = "not_enrolled"
	reasonNoCounter   = "no_such_counter"
)

// unresolved says why a counter did not resolve: the organization it
// belongs to (nil when nothing of it exists) and a sentence for the log.
type unresolved struct {
	counter string
	orgID   *uuid.UUID
	reason  string
	detail  string
}

// resolver resolves a request's counters, each policy, key and workspace
// read once.
type resolver struct {
	st  *store.Store
	now time.Time
	// enrolled says whether the caller may have the organization's
	// counters; nil: every organization (the data plane in process).
	enrolled func(uuid.UUID) bool

	policies   map[uuid.UUID]*store.Policy
	keys       map[uuid.UUID]*store.InferenceKey
	workspaces map[uuid.UUID]*store.Workspace
}

func newResolver(st *store.Store, now time.Time, enrolled func(uuid.UUID) bool) *resolver {
	return &resolver{st: st, now: now, enrolled: enrolled, policies: map[uuid.UUID]*store.Policy{},
		keys: map[uuid.UUID]*store.InferenceKey{}, workspaces: map[uuid.UUID]*store.Workspace{}}
}

// resolve reads the counter's definition; a counter that does not resolve
// (no such policy, rule or key, or one of an organization the caller is
// not enrolled for) is an *unresolved, and no error.
func (r *resolver) resolve(ctx context.Context, name string) (*counterDef, *unresolved, error) {
	if rest, ok := strings.CutPrefix(name, ratePrefix); ok {
		return r.resolveRate(ctx, name, rest)
	}
	c, err := spend.ParseCounter(name)
	if err != nil {
		return nil, &unresolved{counter: name, reason: reasonNoCounter, detail: err.Error()}, nil
	}
	p, err := r.policy(ctx, c.PolicyID)
	if err != nil || p == nil {
		return nil, r.missing(name, nil, "no such policy"), err
	}
	if miss := r.outside(name, p.OrgID); miss != nil {
		return nil, miss, nil
	}
	if !p.Enabled {
		return nil, r.missing(name, &p.OrgID, "the policy is disabled"), nil
	}
	d, target, err := budgetOf(p, c.Period, c.Aggregation)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		return nil, r.missing(name, &p.OrgID, fmt.Sprintf("the policy has no %s %s budget", c.Aggregation, c.Period)), nil
	}
	d.name = name
	if c.Aggregation != string(policy.AggregationPerKey) {
		return d, nil, nil
	}
	k, err := r.key(ctx, c.KeyID)
	if err != nil {
		return nil, nil, err
	}
	if k == nil {
		// Not a key: perhaps the id a user's playground requests in the
		// policy's workspace count under (playground.KeyID).
		return r.resolvePlayground(ctx, d, target, c.KeyID)
	}
	if k.WorkspaceID != p.WorkspaceID {
		return nil, r.missing(name, &p.OrgID, "no such active key in the policy's workspace"), nil
	}
	covered := true
	switch target.Kind {
	case policy.TargetSelectedUsers:
		covered = slices.Contains(target.UserIDs, k.UserID)
	case policy.TargetSelectedKeys:
		covered = slices.Contains(d.scope.keyIDs, k.ID)
	}
	if !covered {
		return nil, r.missing(name, &p.OrgID, "the policy's target does not cover the key"), nil
	}
	id := k.ID
	d.keyID = &id
	return d, nil, nil
}

// budgetOf is a policy's budget of one period and aggregation, without a
// name or key: the amount and the seed scope every counter of it shares;
// nil when the policy has no such budget rule.
func budgetOf(p *store.Policy, period spend.Period, aggregation string) (*counterDef, policy.Target, error) {
	var def policy.Definition
	if err := json.Unmarshal([]byte(p.Definition), &def); err != nil {
		return nil, policy.Target{}, fmt.Errorf("stored definition of policy %s: %w", p.ID, err)
	}
	d := &counterDef{period: period, aggregation: aggregation, orgID: p.OrgID, wsID: p.WorkspaceID, policyID: p.ID, policyName: p.Name, limit: -1}
	all := false
	for _, rule := range def.Rules {
		a := rule.Action
		if a.Kind != policy.ActionBudget || string(a.Period) != string(period) || string(a.Aggregation) != aggregation {
			continue
		}
		// Leniently: an amount an older version stored finer than a
		// nano-dollar, or beyond int64 of them, holds as the nearest
		// amount below it, which the data plane enforces too.
		amount, exact, err := catalog.BudgetNanoUSD(a.AmountUSD.Text)
		if err != nil {
			return nil, policy.Target{}, fmt.Errorf("budget of policy %s: %w", p.ID, err)
		}
		if !exact {
			d.inexact = append(d.inexact, a.AmountUSD.Text)
		}
		// Rules sharing a counter share its spend; the smallest amount
		// holds, as the data plane's claims do.
		if d.limit < 0 || amount < d.limit {
			d.limit = amount
		}
		all = all || rule.Match.Kind != policy.MatchRequest || len(rule.Match.Models) == 0
		d.scope.models = append(d.scope.models, rule.Match.Models...)
	}
	if d.limit < 0 {
		return nil, def.Target, nil
	}
	if all {
		d.scope.models = nil
	}
	d.scope.target(def.Target)
	return d, def.Target, nil
}

// ratePrefix starts a rate-limit counter's name: rl/<key id>/<dimension>.
const ratePrefix = "rl/"

// Rate-limit dimensions, as counter names spell them.
const (
	rateRequests = "requests"
	rateTokens   = "tokens"
)

// RateCounter names a key's rate-limit counter of one dimension.
func RateCounter(keyID uuid.UUID, dimension string) string {
	return ratePrefix + keyID.String() + "/" + dimension
}

func (r *resolver) resolveRate(ctx context.Context, name, rest string) (*counterDef, *unresolved, error) {
	if ws, user, dim, ok := playground.ParseRateCounter(name); ok {
		return r.resolvePlaygroundRate(ctx, name, ws, user, dim)
	}
	keyText, dim, ok := strings.Cut(rest, "/")
	id, err := uuid.Parse(keyText)
	if !ok || err != nil || keyText != id.String() || (dim != rateRequests && dim != rateTokens) {
		return nil, &unresolved{counter: name, reason: reasonNoCounter, detail: "not a rate-limit counter: want rl/<inference key id>/<requests|tokens>"}, nil
	}
	k, err := r.key(ctx, id)
	if err != nil || k == nil {
		return nil, r.missing(name, nil, "no such active key"), err
	}
	if miss := r.outside(name, k.OrgID); miss != nil {
		return nil, miss, nil
	}
	ws, err := r.workspace(ctx, k.WorkspaceID)
	if err != nil || ws == nil {
		return nil, r.missing(name, &k.OrgID, "no such workspace"), err
	}
	limits := publish.EffectiveRateLimits(k.RateLimits, ws.RateLimits)
	limit := limits.RPM
	if dim == rateTokens {
		limit = limits.TPM
	}
	if limit == nil {
		return nil, r.missing(name, &k.OrgID, "the key has no "+dim+" per minute limit"), nil
	}
	keyID := k.ID
	return &counterDef{name: name, rate: true, period: spend.Minute, orgID: k.OrgID, wsID: k.WorkspaceID, policyID: k.ID,
		policyName: "rate limit", keyID: &keyID, limit: *limit}, nil, nil
}

// outside refuses a counter of an organization the caller is not enrolled
// for. The caller is answered as for a counter that does not exist, so it
// cannot tell another tenant's ids from unknown ones; the audit log says
// which it was.
func (r *resolver) outside(name string, org uuid.UUID) *unresolved {
	if r.enrolled == nil || r.enrolled(org) {
		return nil
	}
	return &unresolved{counter: name, orgID: &org, reason: reasonNotEnrolled, detail: "not enrolled for the counter's organization"}
}

func (r *resolver) missing(name string, org *uuid.UUID, detail string) *unresolved {
	if org != nil && r.enrolled != nil && !r.enrolled(*org) {
		return r.outside(name, *org)
	}
	return &unresolved{counter: name, orgID: org, reason: reasonNoCounter, detail: detail}
}

func (r *resolver) policy(ctx context.Context, id uuid.UUID) (*store.Policy, error) {
	if p, ok := r.policies[id]; ok {
		return p, nil
	}
	p, err := r.st.BudgetPolicy(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		p, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read policy %s: %w", id, err)
	}
	r.policies[id] = p
	return p, nil
}

func (r *resolver) key(ctx context.Context, id uuid.UUID) (*store.InferenceKey, error) {
	if k, ok := r.keys[id]; ok {
		return k, nil
	}
	k, err := r.st.BudgetKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && k.ExpiresAt != nil && !r.now.Before(*k.ExpiresAt)) {
		k, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read inference key %s: %w", id, err)
	}
	r.keys[id] = k
	return k, nil
}

func (r *resolver) workspace(ctx context.Context, id uuid.UUID) (*store.Workspace, error) {
	if w, ok := r.workspaces[id]; ok {
		return w, nil
	}
	w, err := r.st.GetWorkspace(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		w, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read workspace %s: %w", id, err)
	}
	r.workspaces[id] = w
	return w, nil
}

// CounterPeriod is the period a counter's name says it counts: a rate
// limit's minute, or a budget's day or month.
func CounterPeriod(name string) (spend.Period, error) {
	if strings.HasPrefix(name, ratePrefix) {
		return spend.Minute, nil
	}
	c, err := spend.ParseCounter(name)
	if err != nil {
		return "", err
	}
	return c.Period, nil
}
