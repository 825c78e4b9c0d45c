package api

import (
	"time"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
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
		{Method: "PATCH", Path: base + "/{key_id}", Tag: tag, Summary: "Rename an inference key, change its rate limits or replace its tags",
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
		Status: status, Tags: wireTags(k.Tags)}
}

// wireTags is a tag set as the API shows it: an object, {} when empty.
func wireTags(t map[string]string) map[string]string {
	if t == nil {
		return map[string]string{}
	}
	return t
}

func (s *Server) createInferenceKey(r *Request) (any, error) {
	in := backend.InferenceKeyCreate{Workspace: r.WS, Owner: r.P.User.ID}
	if err := r.body(func(o *validate.Object) {
		in.Name = requiredString(o, "name", nameRule)
		in.ExpiresAt = readFutureTime(o, "expires_at", time.Now())
		if v, ok := o.Raw("user_id"); ok && v != nil {
			if id, ok := validate.UUID(v, o.Loc().With("user_id"), o.Errors()); ok {
				in.Owner = id
			}
		}
		in.Limits = backend.RateLimitsPatch(readRateLimits(o))
		if t := readOptionalTags(o, "tags"); t != nil {
			in.Tags = *t
		}
	}); err != nil {
		return nil, err
	}
	k, token, err := backend.IssueInferenceKey(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	out := toInferenceKey(k, time.Now())
	out.Token = token
	return out, nil
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

func (s *Server) getInferenceKey(r *Request) (any, error) {
	id, err := r.pathUUID("key_id")
	if err != nil {
		return nil, err
	}
	k, err := backend.InferenceKeyIn(r.ctx, s.store, r.WS.ID, id)
	if err != nil {
		return nil, err
	}
	return toInferenceKey(k, time.Now()), nil
}

func (s *Server) updateInferenceKey(r *Request) (any, error) {
	var in backend.InferenceKeyUpdate
	if err := r.body(func(o *validate.Object) {
		in.Name = optionalString(o, "name", nameRule)
		in.Limits = backend.RateLimitsPatch(readRateLimits(o))
		in.Tags = readOptionalTags(o, "tags")
	}); err != nil {
		return nil, err
	}
	id, err := r.pathUUID("key_id")
	if err != nil {
		return nil, err
	}
	k, err := backend.UpdateInferenceKey(r.ctx, s.store, r.actor(), r.WS, id, in)
	if err != nil {
		return nil, err
	}
	return toInferenceKey(k, time.Now()), nil
}

func (s *Server) revokeInferenceKey(r *Request) (any, error) {
	id, err := r.pathUUID("key_id")
	if err != nil {
		return nil, err
	}
	k, err := backend.RevokeInferenceKey(r.ctx, s.store, r.actor(), r.WS, id)
	if err != nil {
		return nil, err
	}
	return toInferenceKey(k, time.Now()), nil
}
