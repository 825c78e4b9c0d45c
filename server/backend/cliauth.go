package backend

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// CLIStatus is an authorization's status as the CLI and the approval page
// see it: a pending or approved sign-in past its expiry is expired.
func CLIStatus(a *store.CLIAuthorization, now time.Time) string {
	if (a.Status == store.CLIPending || a.Status == store.CLIApproved) && !now.Before(a.ExpiresAt) {
		return "expired"
	}
	return a.Status
}

// NormalizeUserCode accepts what a person types: any case, with or
// without the dash.
func NormalizeUserCode(s string) string {
	s = strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
	if len(s) != 8 {
		return s
	}
	return s[:4] + "-" + s[4:]
}

// FindCLISignIn is the sign-in a person's user code names.
func FindCLISignIn(ctx context.Context, st *store.Store, code string) (*store.CLIAuthorization, error) {
	a, err := st.GetCLIAuthorizationByCode(ctx, NormalizeUserCode(code))
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "no CLI sign-in with code %q; check the code the CLI printed", code)
	}
	return a, err
}

var errNotPending = errorf(Conflict, "this CLI sign-in is no longer awaiting approval; start again with gw login")

// CLIApprover is the person deciding a CLI sign-in, with what bounds the
// key they approve beside their roles: the scope and ceiling of the
// credential they act with.
type CLIApprover struct {
	Actor    Actor
	KeyScope auth.Scope
	Ceiling  auth.Set
}

// CLIApproval is what the approver chose: the whole instance, or an
// organization (by id or slug) and optionally one of its workspaces.
type CLIApproval struct {
	UserCode    string
	Instance    bool
	OrgRef      string
	WorkspaceID *uuid.UUID
}

// ApproveCLISignIn approves a pending sign-in for the approver's own
// rights where they chose, within their credential's ceiling: the key the
// CLI then collects carries exactly those. It returns the organization it
// was approved for (nil for the instance) with the authorization.
func ApproveCLISignIn(ctx context.Context, st *store.Store, who CLIApprover, in CLIApproval) (*store.CLIAuthorization, *store.Organization, error) {
	var a *store.CLIAuthorization
	var org *store.Organization
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if a, err = FindCLISignIn(ctx, tx, in.UserCode); err != nil {
			return err
		}
		if CLIStatus(a, time.Now()) != store.CLIPending {
			return errNotPending
		}
		var ws *store.Workspace
		var rights auth.Set
		if in.Instance {
			rights, err = who.instanceRights()
		} else {
			org, ws, rights, err = who.rightsIn(ctx, tx, in.OrgRef, in.WorkspaceID)
		}
		if err != nil {
			return err
		}
		now := store.Now()
		a.Status, a.UserID, a.DecidedAt = store.CLIApproved, who.Actor.UserID, &now
		entry := AuditEntry{Action: "cli_authorization.approved"}
		if org != nil {
			a.OrgID, entry.OrgID = &org.ID, &org.ID
		}
		if ws != nil {
			a.WorkspaceID, entry.WorkspaceID = &ws.ID, &ws.ID
		}
		a.Permissions = store.Strings(rights.Sorted())
		return decide(ctx, tx, who.Actor, a, now, entry)
	})
	if err != nil {
		return nil, nil, err
	}
	return a, org, nil
}

// DenyCLISignIn refuses a pending sign-in; its CLI learns so on its next
// poll.
func DenyCLISignIn(ctx context.Context, st *store.Store, actor Actor, code string) (*store.CLIAuthorization, error) {
	var a *store.CLIAuthorization
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if a, err = FindCLISignIn(ctx, tx, code); err != nil {
			return err
		}
		now := store.Now()
		a.Status, a.UserID, a.DecidedAt = store.CLIDenied, actor.UserID, &now
		return decide(ctx, tx, actor, a, now, AuditEntry{Action: "cli_authorization.denied"})
	})
	return a, err
}

// decide stores a decision only if the sign-in is still pending and
// unexpired (another tab may have decided it), with its audit entry.
func decide(ctx context.Context, tx *store.Store, actor Actor, a *store.CLIAuthorization, now time.Time, e AuditEntry) error {
	ok, err := tx.DecideCLIAuthorization(ctx, a, now)
	if err != nil {
		return err
	}
	if !ok {
		return errNotPending
	}
	e.TargetType, e.TargetID = "cli_authorization", a.ID.String()
	e.Details = map[string]any{"label": a.Label, "user_code": a.UserCode}
	return Audit(ctx, tx, actor, e)
}

// instanceRights are what an instance-scope key approved by the approver
// carries: their instance role's rights. Only instance owners and admins
// have any; everyone else is told why, since the page offers the choice
// only to them anyway.
func (who CLIApprover) instanceRights() (auth.Set, error) {
	rights := auth.RoleRights(auth.RoleFacts{InstanceRole: who.Actor.InstanceRole}, auth.LevelInstance).Intersect(who.Ceiling)
	if rights.Len() == 0 {
		return nil, errorf(Forbidden, "only an instance owner or admin can approve an instance-scope key; pick an organization instead")
	}
	return rights, nil
}

// errOutOfScope matches the API's refusal of a resource outside the key's
// scope, word for word.
var errOutOfScope = errorf(Forbidden, "out of scope: the management key's scope does not cover this resource")

// rightsIn resolves the organization (and workspace) a sign-in is approved
// for and the approver's own rights there, within their ceiling. An
// organization where they hold none is reported not found, as everywhere.
func (who CLIApprover) rightsIn(ctx context.Context, tx *store.Store, orgRef string, wsID *uuid.UUID) (*store.Organization, *store.Workspace, auth.Set, error) {
	notFound := errorf(NotFound, "organization %q not found", orgRef)
	org, err := tx.GetOrganizationByRef(ctx, orgRef)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil, notFound
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if !who.KeyScope.Covers(auth.Scope{Level: auth.LevelOrganization, OrgID: org.ID}) {
		return nil, nil, nil, errOutOfScope
	}
	userID := *who.Actor.UserID
	facts := auth.RoleFacts{InstanceRole: who.Actor.InstanceRole}
	if m, err := tx.GetMembership(ctx, org.ID, userID); err == nil && m.Status == auth.MembershipActive {
		facts.OrgRole = m.Role
	}
	level := auth.LevelOrganization
	var ws *store.Workspace
	if wsID != nil {
		level = auth.LevelWorkspace
		if ws, err = tx.GetWorkspaceByRef(ctx, org.ID, wsID.String()); errors.Is(err, store.ErrNotFound) {
			return nil, nil, nil, errorf(NotFound, "workspace %s not found", wsID)
		} else if err != nil {
			return nil, nil, nil, err
		}
		if wm, err := tx.GetWorkspaceMember(ctx, ws.ID, userID); err == nil {
			facts.WorkspaceRole = wm.Role
		}
	}
	rights := auth.RoleRights(facts, level).Intersect(who.Ceiling)
	if rights.Len() == 0 {
		return nil, nil, nil, notFound
	}
	return org, ws, rights, nil
}

// CLIDelivery is what the winning poll of an approved sign-in receives:
// the new key's token (shown once), the organization it belongs to, and
// the key it replaced, if any.
type CLIDelivery struct {
	Token    string
	Org      *store.Organization
	Replaced *uuid.UUID
}

// ErrDelivered says another poll already collected the key.
var ErrDelivered = errors.New("cli sign-in: another poll delivered the key")

// DeliverCLISignIn mints the approved key and marks the authorization
// consumed in one transaction; of several simultaneous polls exactly one
// commits, the others get ErrDelivered. The key is the approving user's,
// made on their approval, so they are the actor. A current key the CLI
// presents is revoked in the same transaction (with what it issued) when
// it belongs to the same user and scope; labels play no part.
func DeliverCLISignIn(ctx context.Context, st *store.Store, a *store.CLIAuthorization, current *store.ManagementKey, requestID string) (CLIDelivery, error) {
	var out CLIDelivery
	actor := User(*a.UserID, false, nil, requestID)
	err := st.InTx(ctx, func(tx *store.Store) error {
		out = CLIDelivery{}
		var err error
		if a.OrgID != nil {
			if out.Org, err = tx.GetOrganization(ctx, *a.OrgID); err != nil {
				return err
			}
		}
		k, token, err := MintManagementKey(ctx, tx, actor, KeySpec{Owner: *a.UserID, OrgID: a.OrgID,
			WorkspaceID: a.WorkspaceID, Permissions: a.Permissions, Label: a.Label, Via: "cli_authorization"})
		if err != nil {
			return err
		}
		won, err := tx.ConsumeCLIAuthorization(ctx, a.ID, k.ID)
		if err != nil {
			return err
		}
		if !won {
			return ErrDelivered
		}
		out.Token = token
		if current == nil || current.UserID != *a.UserID || !SameID(current.OrgID, a.OrgID) || !SameID(current.WorkspaceID, a.WorkspaceID) {
			return nil
		}
		out.Replaced = &current.ID
		return replaceKey(ctx, tx, actor, current)
	})
	return out, err
}

// replaceKey revokes the key a CLI sign-in replaced, and what it issued.
func replaceKey(ctx context.Context, tx *store.Store, actor Actor, k *store.ManagementKey) error {
	now := store.Now()
	if _, err := tx.RevokeManagementKey(ctx, k.ID, now); err != nil {
		return err
	}
	if err := RevokeIssuedKeys(ctx, tx, actor, []uuid.UUID{k.ID}, now, "issuing key replaced by CLI sign-in"); err != nil {
		return err
	}
	return Audit(ctx, tx, actor, AuditEntry{Action: "management_key.revoked", TargetType: "management_key", TargetID: k.ID.String(),
		OrgID: k.OrgID, WorkspaceID: k.WorkspaceID,
		Details: map[string]any{"label": k.Label, "prefix": k.Prefix, "reason": "replaced by CLI sign-in"}})
}
