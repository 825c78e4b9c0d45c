package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) inferenceKeyRoutes() []*Route {
	const tag, base = "Workspace Inference Keys", orgWS + "/{workspace_ref}/inference-keys"
	return []*Route{
		{Method: "POST", Path: base, Tag: tag, Summary: "Issue an inference key (sk-gw-…, shown once)",
			Perms: []auth.Permission{auth.InferenceKeysManage}, Body: wire.InferenceKeyCreate{}, Result: wire.InferenceKey{},
			RefreshesBundles: true, Handle: s.createInferenceKey},
		{Method: "GET", Path: base, Tag: tag, Summary: "List the workspace's inference keys (complete set, metadata only)",
			Perms: []auth.Permission{auth.InferenceKeysRead}, Result: []wire.InferenceKey{}, Handle: s.listInferenceKeys},
		{Method: "GET", Path: base + "/{key_id}", Tag: tag, Summary: "Get an inference key (metadata only)",
			Perms: []auth.Permission{auth.InferenceKeysRead}, Result: wire.InferenceKey{}, Handle: s.getInferenceKey},
		{Method: "PATCH", Path: base + "/{key_id}", Tag: tag, Summary: "Rename an inference key or change its rate limits",
			Perms: []auth.Permission{auth.InferenceKeysManage}, Body: wire.InferenceKeyUpdate{}, Result: wire.InferenceKey{},
			RefreshesBundles: true, Handle: s.updateInferenceKey},
		{Method: "POST", Path: base + "/{key_id}/revoke", Tag: tag, Summary: "Revoke an inference key (idempotent)",
			Perms: []auth.Permission{auth.InferenceKeysManage}, Result: wire.InferenceKey{}, RefreshesBundles: true, Handle: s.revokeInferenceKey},
	}
}

func toInferenceKey(k *store.InferenceKey, now time.Time) wire.InferenceKey {
	status := wire.KeyActive
	switch {
	case k.RevokedAt != nil:
		status = wire.KeyRevoked
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		status = wire.KeyExpired
	}
	return wire.InferenceKey{ID: k.ID, OrgID: k.OrgID, WorkspaceID: k.WorkspaceID, UserID: k.UserID, Name: k.Name, Prefix: k.Prefix,
		ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, RateLimits: toRateLimits(k.RateLimits), CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt,
		Status: status}
}

func (s *Server) createInferenceKey(r *Request) (any, error) {
	var name string
	var expires *time.Time
	var limitsIn rateLimitsInput
	owner := r.P.User.ID
	if err := r.body(func(o *validate.Object) {
		name = requiredString(o, "name", nameRule)
		expires = readFutureTime(o, "expires_at", time.Now())
		if v, ok := o.Raw("user_id"); ok && v != nil {
			if id, ok := validate.UUID(v, o.Loc().With("user_id"), o.Errors()); ok {
				owner = id
			}
		}
		limitsIn = readRateLimits(o)
	}); err != nil {
		return nil, err
	}
	limits := limitsIn.onto(store.RateLimits{})
	if err := checkWithinWorkspace(limitsIn, limits, r.WS.RateLimits); err != nil {
		return nil, err
	}
	// Policies target keys by owner: a key for someone else would carry
	// their policies, not the caller's, so only member managers may.
	if owner != r.P.User.ID && !managesOthersKeys(r) {
		return nil, errorf(http.StatusForbidden, "issuing an inference key for another member needs members.manage or principals.manage")
	}
	var out wire.InferenceKey
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		// The owner must be an active member: the bundle serves only keys of
		// active members, and policies target keys by their owner.
		m, err := tx.GetMembership(r.ctx, r.Org.ID, owner)
		if errors.Is(err, store.ErrNotFound) || (err == nil && m.Status != auth.MembershipActive) {
			return validate.Single(validate.Loc{"body", "user_id"}, "value_error",
				"Value error, the key's owner must be an active member of the organization", owner.String(), nil)
		}
		if err != nil {
			return err
		}
		// A disabled account's keys are revoked and no bundle carries
		// its keys: a new one would be dead on arrival.
		if u, err := tx.GetUser(r.ctx, owner); err != nil {
			return err
		} else if u.DisabledAt != nil {
			return validate.Single(validate.Loc{"body", "user_id"}, "value_error",
				"Value error, the key's owner has a disabled account", owner.String(), nil)
		}
		token, prefix, hash := auth.NewToken(auth.InferenceKeyPrefix)
		now := store.Now()
		k := &store.InferenceKey{ID: uuid.New(), OrgID: r.Org.ID, WorkspaceID: r.WS.ID, UserID: owner, Name: name, Prefix: prefix,
			TokenHash: hash, ExpiresAt: expires, RateLimits: limits, CreatedBy: &r.P.User.ID, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateInferenceKey(r.ctx, k); err != nil {
			return err
		}
		out = toInferenceKey(k, time.Now())
		out.Token = token
		return r.audit(tx, auditEntry{Action: "inference_key.issued", TargetType: "inference_key", TargetID: k.ID.String(),
			Details: map[string]any{"name": name, "prefix": prefix, "user_id": owner.String(), "rate_limits": rateLimitsDetail(limits)}})
	})
	return out, err
}

// readFutureTime reads an optional date-time member that must lie ahead.
func readFutureTime(o *validate.Object, name string, now time.Time) *time.Time {
	v, ok := o.Raw(name)
	if !ok || v == nil {
		return nil
	}
	t, ok := validate.DateTime(v, o.Loc().With(name), o.Errors())
	if !ok {
		return nil
	}
	if !t.After(now) {
		o.Errors().Add(o.Loc().With(name), "value_error", "Value error, "+name+" must be in the future", v, nil)
		return nil
	}
	t = t.Truncate(time.Microsecond)
	return &t
}

func (s *Server) listInferenceKeys(r *Request) (any, error) {
	keys, err := s.store.ListInferenceKeys(r.ctx, r.WS.ID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]wire.InferenceKey, len(keys))
	for i := range keys {
		out[i] = toInferenceKey(&keys[i], now)
	}
	return out, nil
}

func (s *Server) pathInferenceKey(tx *store.Store, r *Request) (*store.InferenceKey, error) {
	id, err := r.pathUUID("key_id")
	if err != nil {
		return nil, err
	}
	k, err := tx.GetInferenceKey(r.ctx, r.WS.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(http.StatusNotFound, "inference key %s not found", id)
	}
	return k, err
}

func (s *Server) getInferenceKey(r *Request) (any, error) {
	k, err := s.pathInferenceKey(s.store, r)
	if err != nil {
		return nil, err
	}
	return toInferenceKey(k, time.Now()), nil
}

func (s *Server) updateInferenceKey(r *Request) (any, error) {
	var name *string
	var limitsIn rateLimitsInput
	if err := r.body(func(o *validate.Object) {
		name = optionalString(o, "name", nameRule)
		limitsIn = readRateLimits(o)
	}); err != nil {
		return nil, err
	}
	var out wire.InferenceKey
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		k, err := s.pathInferenceKey(tx, r)
		if err != nil {
			return err
		}
		// Members the body left out keep their stored values.
		limits := limitsIn.onto(k.RateLimits)
		if err := checkWithinWorkspace(limitsIn, limits, r.WS.RateLimits); err != nil {
			return err
		}
		before := map[string]any{"name": k.Name, "rate_limits": rateLimitsDetail(k.RateLimits)}
		if name != nil {
			k.Name = *name
		}
		k.RateLimits = limits
		k.UpdatedAt = store.Now()
		if err := tx.UpdateInferenceKey(r.ctx, k); err != nil {
			return err
		}
		out = toInferenceKey(k, time.Now())
		return r.audit(tx, auditEntry{Action: "inference_key.updated", TargetType: "inference_key", TargetID: k.ID.String(),
			Details: map[string]any{"before": before, "after": map[string]any{"name": k.Name, "rate_limits": rateLimitsDetail(k.RateLimits)}}})
	})
	return out, err
}

func (s *Server) revokeInferenceKey(r *Request) (any, error) {
	var out wire.InferenceKey
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		k, err := s.pathInferenceKey(tx, r)
		if err != nil {
			return err
		}
		revoked, err := tx.RevokeInferenceKey(r.ctx, k.ID, store.Now())
		if err != nil {
			return err
		}
		if revoked {
			if err := r.audit(tx, auditEntry{Action: "inference_key.revoked", TargetType: "inference_key", TargetID: k.ID.String(),
				Details: map[string]any{"name": k.Name, "prefix": k.Prefix}}); err != nil {
				return err
			}
		}
		// Read back: a concurrent revoke may have set the time first.
		if k, err = tx.GetInferenceKey(r.ctx, r.WS.ID, k.ID); err != nil {
			return err
		}
		out = toInferenceKey(k, time.Now())
		return nil
	})
	return out, err
}
