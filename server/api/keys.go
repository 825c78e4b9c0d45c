package api

import (
	"time"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

func (s *Server) keyRoutes() []*Route {
	type place struct{ tag, prefix string }
	places := []place{
		{"Instance Management Keys", "/api/v1/instance/management-keys"},
		{"Management Keys", "/api/v1/organizations/{org_id}/management-keys"},
		{"Workspace Management Keys", orgWS + "/{workspace_ref}/management-keys"},
	}
	var routes []*Route
	for _, p := range places {
		list := &Route{Method: "GET", Path: p.prefix, Tag: p.tag, Summary: "List management keys (complete set, metadata only)",
			Perms: []auth.Permission{auth.ManagementKeysRead}, Result: []wire.ManagementKey{}, Handle: s.listKeys}
		if p.tag == "Instance Management Keys" {
			list.Summary = "List management keys across all scopes"
			list.Query = []QueryParam{{Name: "user_id", Description: "Only keys issued to this principal (UUID).", Format: "uuid"}}
		}
		routes = append(routes,
			&Route{Method: "POST", Path: p.prefix, Tag: p.tag, Summary: "Issue a management key (the token is shown once)",
				Perms: []auth.Permission{auth.ManagementKeysIssue}, Body: wire.ManagementKeyCreate{}, Result: wire.ManagementKey{}, Handle: s.createKey},
			list,
			&Route{Method: "GET", Path: p.prefix + "/{key_id}", Tag: p.tag, Summary: "Get a management key (metadata only)",
				Perms: []auth.Permission{auth.ManagementKeysRead}, Result: wire.ManagementKey{}, Handle: s.getKey},
			&Route{Method: "POST", Path: p.prefix + "/{key_id}/revoke", Tag: p.tag, Summary: "Revoke a management key (idempotent)",
				Perms: []auth.Permission{auth.ManagementKeysRevoke}, Result: wire.ManagementKey{}, Handle: s.revokeKey},
		)
	}
	return routes
}

// readKeyInput reads spec 4.3's body, also nested in 4.4: a key's
// permissions, label and expiry.
func readKeyInput(o *validate.Object, now time.Time) backend.KeyIssue {
	var in backend.KeyIssue
	if v, ok := o.Require("permissions"); ok {
		seen := map[string]bool{}
		validate.List(v, o.Loc().With("permissions"), validate.ListRule{Min: 1}, o.Errors(), func(item any, loc validate.Loc) {
			name, ok := validate.Literal(item, loc, auth.Names(), o.Errors())
			if ok && !seen[name] {
				seen[name] = true
				in.Permissions = append(in.Permissions, name)
			}
		})
	}
	in.Label = requiredString(o, "label", labelRule)
	if v, ok := o.Raw("expires_at"); ok && v != nil {
		if t, ok := validate.DateTime(v, o.Loc().With("expires_at"), o.Errors()); ok {
			if !t.After(now) {
				o.Errors().Add(o.Loc().With("expires_at"), "value_error", "Value error, expires_at must be in the future", v, nil)
			} else {
				t = t.Truncate(time.Microsecond)
				in.ExpiresAt = &t
			}
		}
	}
	return in
}

func (s *Server) createKey(r *Request) (any, error) {
	var in backend.KeyIssue
	if err := r.body(func(o *validate.Object) { in = readKeyInput(o, time.Now()) }); err != nil {
		return nil, err
	}
	// The caller's own key, at the route's scope.
	in.Owner = r.P.User.ID
	if r.Org != nil {
		in.OrgID = &r.Org.ID
	}
	if r.WS != nil {
		in.WorkspaceID = &r.WS.ID
	}
	k, token, err := backend.IssueManagementKey(r.ctx, s.store, r.actor(), in)
	if err != nil {
		return nil, err
	}
	out := toManagementKey(k, time.Now())
	out.Token = token
	return out, nil
}

// keyView is the set of keys a route's scope shows: all keys at instance
// scope, the organization's (and its workspaces') keys, or the
// workspace's; in an organization or workspace, only the caller's own
// unless it manages others' keys.
func keyView(r *Request) backend.KeyView {
	var v backend.KeyView
	if r.Org != nil {
		v.OrgID = &r.Org.ID
		if !managesOthersKeys(r) {
			v.OwnerID = &r.P.User.ID
		}
	}
	if r.WS != nil {
		v.WorkspaceID = &r.WS.ID
	}
	return v
}

func (s *Server) listKeys(r *Request) (any, error) {
	f := keyView(r).Filter()
	if raw, ok := r.R.URL.Query()["user_id"]; ok && r.Org == nil {
		var errs validate.Errors
		id, _ := validate.UUIDString(raw[0], validate.Loc{"query", "user_id"}, &errs)
		if err := errs.Err(); err != nil {
			return nil, err
		}
		f.UserID = &id
	}
	keys, err := s.store.ListManagementKeys(r.ctx, f)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]wire.ManagementKey, len(keys))
	for i := range keys {
		out[i] = toManagementKey(&keys[i], now)
	}
	return out, nil
}

// managesOthersKeys reports whether the caller may see and revoke keys of
// other principals in an organization or workspace: only those who manage
// members (or principals) do; everyone else sees their own keys only. At
// instance scope management-keys.read shows every key (spec 4.5).
func managesOthersKeys(r *Request) bool {
	return r.Rights.Has(auth.MembersManage) || r.Rights.Has(auth.PrincipalsManage)
}

func (s *Server) getKey(r *Request) (any, error) {
	id, err := r.pathUUID("key_id")
	if err != nil {
		return nil, err
	}
	k, err := backend.ManagementKeyIn(r.ctx, s.store, keyView(r), id)
	if err != nil {
		return nil, err
	}
	return toManagementKey(k, time.Now()), nil
}

func (s *Server) revokeKey(r *Request) (any, error) {
	id, err := r.pathUUID("key_id")
	if err != nil {
		return nil, err
	}
	k, err := backend.RevokeManagementKey(r.ctx, s.store, r.actor(), keyView(r), id)
	if err != nil {
		return nil, err
	}
	return toManagementKey(k, time.Now()), nil
}
