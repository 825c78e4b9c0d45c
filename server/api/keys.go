package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
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

// keyInput is spec 4.3's body, also nested in 4.4.
type keyInput struct {
	Permissions []string
	Label       string
	ExpiresAt   *time.Time
}

func readKeyInput(o *validate.Object, now time.Time) keyInput {
	var in keyInput
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

// issueKey mints a key for owner at the request's scope. The caller can
// hand on only what it holds itself: permissions within its rights here,
// and no later expiry than its own key.
func (s *Server) issueKey(tx *store.Store, r *Request, owner uuid.UUID, in keyInput) (*store.ManagementKey, string, error) {
	if missing := r.Rights.Missing(in.Permissions); len(missing) > 0 {
		return nil, "", errorf(http.StatusForbidden, "cannot issue permissions the caller does not hold here: %s", strings.Join(missing, ", "))
	}
	var parent *uuid.UUID
	if k := r.P.Key; k != nil {
		parent = &k.ID
		if k.ExpiresAt != nil && (in.ExpiresAt == nil || in.ExpiresAt.After(*k.ExpiresAt)) {
			return nil, "", errorf(http.StatusForbidden, "a key cannot outlive the key that issues it (expires %s); set expires_at no later than that",
				k.ExpiresAt.Format(time.RFC3339))
		}
	}
	spec := backend.KeySpec{Owner: owner, ParentID: parent, Permissions: in.Permissions, Label: in.Label, ExpiresAt: in.ExpiresAt}
	if r.Org != nil {
		spec.OrgID = &r.Org.ID
	}
	if r.WS != nil {
		spec.WorkspaceID = &r.WS.ID
	}
	k, token, err := backend.MintManagementKey(r.ctx, tx, r.actor(), spec)
	return k, token, err
}

func (s *Server) createKey(r *Request) (any, error) {
	var in keyInput
	if err := r.body(func(o *validate.Object) { in = readKeyInput(o, time.Now()) }); err != nil {
		return nil, err
	}
	var out wire.ManagementKey
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		k, token, err := s.issueKey(tx, r, r.P.User.ID, in)
		if err != nil {
			return err
		}
		out = toManagementKey(k, time.Now())
		out.Token = token
		return nil
	})
	return out, err
}

// keyFilter is the set of keys a route's scope shows: all keys at instance
// scope, the organization's (and its workspaces') keys, or the workspace's.
func keyFilter(r *Request) store.KeyFilter {
	var f store.KeyFilter
	switch {
	case r.WS != nil:
		f.WorkspaceID = &r.WS.ID
	case r.Org != nil:
		f.OrgID = &r.Org.ID
	}
	return f
}

func (s *Server) listKeys(r *Request) (any, error) {
	f := keyFilter(r)
	if raw, ok := r.R.URL.Query()["user_id"]; ok && r.Org == nil {
		var errs validate.Errors
		id, _ := validate.UUIDString(raw[0], validate.Loc{"query", "user_id"}, &errs)
		if err := errs.Err(); err != nil {
			return nil, err
		}
		f.UserID = &id
	}
	if r.Org != nil && !managesOthersKeys(r) {
		f.UserID = &r.P.User.ID
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

// scopedKey loads the path's key if it lies within the route's scope; one
// outside it is reported as not found, whether or not it exists.
func (s *Server) scopedKey(tx *store.Store, r *Request) (*store.ManagementKey, error) {
	id, err := r.pathUUID("key_id")
	if err != nil {
		return nil, err
	}
	k, err := tx.GetManagementKey(r.ctx, id)
	notFound := errorf(http.StatusNotFound, "management key %s not found", id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	f := keyFilter(r)
	if (f.OrgID != nil && (k.OrgID == nil || *k.OrgID != *f.OrgID)) ||
		(f.WorkspaceID != nil && (k.WorkspaceID == nil || *k.WorkspaceID != *f.WorkspaceID)) ||
		(r.Org != nil && !managesOthersKeys(r) && k.UserID != r.P.User.ID) {
		return nil, notFound
	}
	return k, nil
}

// managesOthersKeys reports whether the caller may see and revoke keys of
// other principals in an organization or workspace: only those who manage
// members (or principals) do; everyone else sees their own keys only. At
// instance scope management-keys.read shows every key (spec 4.5).
func managesOthersKeys(r *Request) bool {
	return r.Rights.Has(auth.MembersManage) || r.Rights.Has(auth.PrincipalsManage)
}

func (s *Server) getKey(r *Request) (any, error) {
	k, err := s.scopedKey(s.store, r)
	if err != nil {
		return nil, err
	}
	return toManagementKey(k, time.Now()), nil
}

func (s *Server) revokeKey(r *Request) (any, error) {
	var out wire.ManagementKey
	err := s.store.InTx(r.ctx, func(tx *store.Store) error {
		k, err := s.scopedKey(tx, r)
		if err != nil {
			return err
		}
		now := store.Now()
		revoked, err := tx.RevokeManagementKey(r.ctx, k.ID, now)
		if err != nil {
			return err
		}
		// What the key issued goes with it, even when it was revoked
		// before (a key issued under it then must not survive).
		if err := backend.RevokeIssuedKeys(r.ctx, tx, r.actor(), []uuid.UUID{k.ID}, now, "issuing key revoked"); err != nil {
			return err
		}
		if revoked {
			if err := r.audit(tx, auditEntry{Action: "management_key.revoked", TargetType: "management_key", TargetID: k.ID.String(),
				Details: map[string]any{"label": k.Label, "prefix": k.Prefix}}); err != nil {
				return err
			}
		}
		// Read back: a concurrent revoke may have set the time first.
		if k, err = tx.GetManagementKey(r.ctx, k.ID); err != nil {
			return err
		}
		out = toManagementKey(k, time.Now())
		return nil
	})
	return out, err
}
