package budgets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/playground"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
)

// The Workspace Playground runs a user's requests without an inference
// key, on a key the data plane makes up: its id, playground.KeyID of the
// workspace and the user, is what per_key budgets count the user's
// playground under, and its rate limits are the workspace's, leased as
// playground.RateCounter. The control plane grants those counters as it
// grants a key's: from its own store, for a user who may use the
// playground (an active member of the organization, or an instance owner
// or admin), covered by the policy's target (the whole workspace, or
// selected_users naming the user; selected_keys never covers a
// playground, which has no key to list). Before, it knew none of them and
// refused every playground request of a workspace with a per_key budget
// (issue 26 row 2).

// playgroundKeys caches the derived ids resolved so far: id → workspace
// and user. A derivation never changes, so an entry is never wrong; who
// may use the playground is checked again on every use. It is bounded by
// starting afresh.
var playgroundKeys struct {
	sync.Mutex
	m map[uuid.UUID]playgroundKey
}

type playgroundKey struct{ ws, user uuid.UUID }

const maxPlaygroundKeys = 100_000

// resolvePlayground resolves a per_key counter whose key id is no key's:
// the counter of a user's playground in the policy's workspace, or nothing.
func (r *resolver) resolvePlayground(ctx context.Context, d *counterDef, target policy.Target, id uuid.UUID) (*counterDef, *unresolved, error) {
	var candidates []uuid.UUID
	switch target.Kind {
	case policy.TargetSelectedUsers:
		candidates = target.UserIDs
	case policy.TargetSelectedKeys:
		return nil, r.missing(d.name, &d.orgID, "no such active key in the policy's workspace"), nil
	}
	user, err := r.playgroundUser(ctx, d.orgID, d.wsID, id, candidates)
	if err != nil || user == nil {
		return nil, r.missing(d.name, &d.orgID, "no such active key in the policy's workspace, nor a playground of one of its users"), err
	}
	if target.Kind == policy.TargetSelectedUsers && !slices.Contains(target.UserIDs, *user) {
		return nil, r.missing(d.name, &d.orgID, "the policy's target does not cover the user"), nil
	}
	d.keyID, d.playgroundUser = &id, user
	// Seeded with the user's playground requests in the workspace: their
	// events carry the user and no key.
	d.scope.ownerIDs, d.scope.keyIDs, d.scope.keyless = []uuid.UUID{*user}, nil, true
	return d, nil, nil
}

// resolvePlaygroundRate resolves playground.RateCounter's counter: the
// workspace's own limit of the dimension, counted for the user.
func (r *resolver) resolvePlaygroundRate(ctx context.Context, name string, wsID, user uuid.UUID, dim string) (*counterDef, *unresolved, error) {
	if dim != rateRequests && dim != rateTokens {
		return nil, &unresolved{counter: name, reason: reasonNoCounter, detail: "not a rate-limit counter: want rl/playground/<workspace id>/<user id>/<requests|tokens>"}, nil
	}
	ws, err := r.workspace(ctx, wsID)
	if err != nil || ws == nil {
		return nil, r.missing(name, nil, "no such workspace"), err
	}
	if miss := r.outside(name, ws.OrgID); miss != nil {
		return nil, miss, nil
	}
	ok, err := r.mayPlay(ctx, ws.OrgID, user)
	if err != nil || !ok {
		return nil, r.missing(name, &ws.OrgID, "no such user of the workspace's organization"), err
	}
	limits := publish.EffectiveRateLimits(store.RateLimits{}, ws.RateLimits)
	limit := limits.RPM
	if dim == rateTokens {
		limit = limits.TPM
	}
	if limit == nil {
		return nil, r.missing(name, &ws.OrgID, "the workspace has no "+dim+" per minute limit"), nil
	}
	keyID := playground.KeyID(wsID, user)
	return &counterDef{name: name, rate: true, period: spend.Minute, orgID: ws.OrgID, wsID: wsID, policyID: keyID,
		policyName: "rate limit", keyID: &keyID, playgroundUser: &user, limit: *limit}, nil, nil
}

// playgroundUser is the user whose playground in workspace ws counts
// under id, if it is one who may use it: found among candidates, or, when
// they are nil, among the organization's members and the instance's
// owners and admins. nil when there is none.
func (r *resolver) playgroundUser(ctx context.Context, orgID, ws, id uuid.UUID, candidates []uuid.UUID) (*uuid.UUID, error) {
	playgroundKeys.Lock()
	k, known := playgroundKeys.m[id]
	playgroundKeys.Unlock()
	if !known || k.ws != ws {
		if candidates == nil {
			var err error
			if candidates, err = r.orgPeople(ctx, orgID); err != nil {
				return nil, err
			}
		}
		i := slices.IndexFunc(candidates, func(u uuid.UUID) bool { return playground.KeyID(ws, u) == id })
		if i < 0 {
			return nil, nil
		}
		k = playgroundKey{ws: ws, user: candidates[i]}
		playgroundKeys.Lock()
		if playgroundKeys.m == nil || len(playgroundKeys.m) >= maxPlaygroundKeys {
			playgroundKeys.m = map[uuid.UUID]playgroundKey{}
		}
		playgroundKeys.m[id] = k
		playgroundKeys.Unlock()
	}
	ok, err := r.mayPlay(ctx, orgID, k.user)
	if err != nil || !ok {
		return nil, err
	}
	return &k.user, nil
}

// orgPeople are the users who may use an organization's playgrounds at
// all: its members and the instance's owners and admins.
func (r *resolver) orgPeople(ctx context.Context, orgID uuid.UUID) ([]uuid.UUID, error) {
	members, err := r.st.ListMembers(ctx, orgID)
	if err != nil {
		return nil, fmt.Errorf("list members of %s: %w", orgID, err)
	}
	out := make([]uuid.UUID, 0, len(members))
	for _, m := range members {
		out = append(out, m.UserID)
	}
	users, err := r.st.ListUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	for _, u := range users {
		if u.InstanceRole == auth.InstanceOwner || u.InstanceRole == auth.InstanceAdmin {
			out = append(out, u.ID)
		}
	}
	return out, nil
}

// mayPlay says whether a user may use the organization's playgrounds: an
// account neither deleted nor disabled, that is an active member or an
// instance owner or admin. Which workspace, and which management key, the
// management API checked when the request came.
func (r *resolver) mayPlay(ctx context.Context, orgID, userID uuid.UUID) (bool, error) {
	u, err := r.st.GetUser(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read user %s: %w", userID, err)
	}
	if u.DeletedAt != nil || u.DisabledAt != nil {
		return false, nil
	}
	if u.InstanceRole == auth.InstanceOwner || u.InstanceRole == auth.InstanceAdmin {
		return true, nil
	}
	m, err := r.st.GetMembership(ctx, orgID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read membership of %s: %w", userID, err)
	}
	return m.Status == auth.MembershipActive, nil
}
