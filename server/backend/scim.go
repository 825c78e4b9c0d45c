package backend

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/scim"
	"github.com/gw-gateway/gw/server/store"
)

// SCIM 2.0 provisioning (issue 31, part 2; docs/identity.md): an
// organization's SCIM tokens, and the users and groups its provisioning
// client (Okta, Microsoft Entra ID…) manages. The protocol's shapes,
// PATCH and filters are server/scim's; the handlers are server/api's
// scim.go.

// SCIMTokenPrefix begins every SCIM token.
const SCIMTokenPrefix = "scim_"

// SCIMActor is a SCIM token acting for its organization: the audit log
// names the token as the actor's key.
func SCIMActor(t *store.SCIMToken, requestID string) Actor {
	id := t.ID
	return Actor{Type: "scim_token", KeyID: &id, RequestID: requestID}
}

// CreateSCIMToken makes an organization's SCIM token. The secret is
// returned once and stored as its hash.
func CreateSCIMToken(ctx context.Context, st *store.Store, actor Actor, orgID uuid.UUID, label string) (*store.SCIMToken, string, error) {
	token, prefix, hash := auth.NewToken(SCIMTokenPrefix)
	t := &store.SCIMToken{ID: uuid.New(), OrgID: orgID, Label: label, Prefix: prefix, TokenHash: hash, CreatedBy: actor.UserID, CreatedAt: store.Now()}
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.CreateSCIMToken(ctx, t); err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "scim_token.created", TargetType: "scim_token", TargetID: t.ID.String(), OrgID: &orgID,
			Details: map[string]any{"label": t.Label, "prefix": t.Prefix}})
	})
	if err != nil {
		return nil, "", err
	}
	return t, token, nil
}

// DeleteSCIMToken deletes an organization's token: its provisioning client
// is refused from then on. Another organization's token is not found.
func DeleteSCIMToken(ctx context.Context, st *store.Store, actor Actor, orgID, id uuid.UUID) (*store.SCIMToken, error) {
	var t *store.SCIMToken
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if t, err = tx.DeleteSCIMToken(ctx, orgID, id); errors.Is(err, store.ErrNotFound) {
			return errorf(NotFound, "SCIM token %s not found", id)
		} else if err != nil {
			return err
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "scim_token.deleted", TargetType: "scim_token", TargetID: t.ID.String(), OrgID: &orgID,
			Details: map[string]any{"label": t.Label, "prefix": t.Prefix}})
	})
	return t, err
}

// SCIMTokenFor is the token whose secret is token, its use recorded, or
// NotFound.
func SCIMTokenFor(ctx context.Context, st *store.Store, token string) (*store.SCIMToken, error) {
	t, err := st.GetSCIMTokenByHash(ctx, auth.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "unknown SCIM token")
	}
	if err != nil {
		return nil, err
	}
	now := store.Now()
	// A write a minute at most: a busy provisioning run is not a write
	// per request.
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
		if err := st.TouchSCIMToken(ctx, t.ID, now); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// SCIMUsers lists the users an organization's token sees (its members and
// the accounts its provisioning created or adopted), narrowed to one
// email when given.
func SCIMUsers(ctx context.Context, st *store.Store, orgID uuid.UUID, email string) ([]scim.User, error) {
	rows, err := st.SCIMUsers(ctx, orgID, nil, NormalizeEmail(email))
	if err != nil {
		return nil, err
	}
	groups, err := scimGroupsByUser(ctx, st, orgID)
	if err != nil {
		return nil, err
	}
	out := make([]scim.User, len(rows))
	for i := range rows {
		out[i] = scimUser(&rows[i], groups[rows[i].ID])
	}
	return out, nil
}

// SCIMUser is one user the organization's token sees, or NotFound (an
// id that is no uuid, another organization's account).
func SCIMUser(ctx context.Context, st *store.Store, orgID uuid.UUID, id string) (scim.User, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return scim.User{}, errorf(NotFound, "user %s not found", id)
	}
	row, err := scimUserRow(ctx, st, orgID, uid)
	if err != nil {
		return scim.User{}, err
	}
	groups, err := scimGroupsOf(ctx, st, orgID, uid)
	if err != nil {
		return scim.User{}, err
	}
	return scimUser(row, groups), nil
}

func scimUserRow(ctx context.Context, tx *store.Store, orgID, id uuid.UUID) (*store.SCIMUserRow, error) {
	rows, err := tx.SCIMUsers(ctx, orgID, &id, "")
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errorf(NotFound, "user %s not found", id)
	}
	return &rows[0], nil
}

// scimGroupsOf is the organization's groups a user is in.
func scimGroupsOf(ctx context.Context, tx *store.Store, orgID, userID uuid.UUID) ([]scim.Ref, error) {
	rows, err := tx.ListSCIMGroupsOfUser(ctx, orgID, userID)
	if err != nil {
		return nil, err
	}
	out := make([]scim.Ref, len(rows))
	for i, r := range rows {
		out[i] = scim.Ref{Value: r.GroupID.String(), Display: r.DisplayName}
	}
	return out, nil
}

func scimGroupsByUser(ctx context.Context, tx *store.Store, orgID uuid.UUID) (map[uuid.UUID][]scim.Ref, error) {
	members, err := tx.ListSCIMGroupMembers(ctx, orgID, nil)
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID][]scim.Ref{}
	for _, m := range members {
		out[m.UserID] = append(out[m.UserID], scim.Ref{Value: m.GroupID.String(), Display: m.DisplayName})
	}
	return out, nil
}

func scimUser(r *store.SCIMUserRow, groups []scim.Ref) scim.User {
	u := scim.User{ID: r.ID.String(), UserName: r.Email, DisplayName: r.Name, Active: r.DisabledAt == nil, Groups: groups,
		Created: r.CreatedAt, Modified: r.UpdatedAt}
	if r.ExternalID != nil {
		u.ExternalID, u.GivenName, u.FamilyName = *r.ExternalID, *r.GivenName, *r.FamilyName
	}
	return u
}

// scimOwns says whether an organization's provisioning may disable,
// enable, rename or delete an account: a person (no instance role, no
// service account) whose memberships are all in that organization. An
// account that is also another organization's, or holds an instance
// role, or owning the organization, is not one organization's token's to
// stop: the token has no more power than the organization's
// administrators (who neither disable accounts nor act on owners).
func scimOwns(ctx context.Context, tx *store.Store, orgID uuid.UUID, u *store.User) (bool, error) {
	if u.ServiceAccount || u.InstanceRole != auth.InstanceMember {
		return false, nil
	}
	ms, err := tx.ListUserMemberships(ctx, u.ID)
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.OrgID != orgID || m.Role == auth.OrgOwner {
			return false, nil
		}
	}
	return true, nil
}

func errNotOwned(email, what string) error {
	return errorf(Forbidden, "%s belongs to other organizations too or holds an instance role: this organization's provisioning cannot %s it "+
		"(an instance administrator can)", email, what)
}

// SCIMCreateUser creates an account for a person the provisioning client
// assigns (no password: they sign in through the identity provider),
// linked to the organization. A taken email is a Conflict (the client
// finds existing people with filter=userName eq "…" first). Memberships
// come from the groups the person is put in.
func SCIMCreateUser(ctx context.Context, st *store.Store, actor Actor, orgID uuid.UUID, in scim.User) (scim.User, error) {
	var out scim.User
	err := st.InTx(ctx, func(tx *store.Store) error {
		now := store.Now()
		u := &store.User{ID: uuid.New(), Email: NormalizeEmail(in.UserName), Name: in.Name(), InstanceRole: auth.InstanceMember,
			CreatedAt: now, UpdatedAt: now}
		if !in.Active {
			u.DisabledAt = &now
		}
		if err := tx.CreateUser(ctx, u); errors.Is(err, store.ErrConflict) {
			return errorf(Conflict, "userName %s is taken", u.Email)
		} else if err != nil {
			return err
		}
		if err := tx.UpsertSCIMUser(ctx, &store.SCIMUser{OrgID: orgID, UserID: u.ID, ExternalID: in.ExternalID, GivenName: in.GivenName,
			FamilyName: in.FamilyName, CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		if err := Audit(ctx, tx, actor, AuditEntry{Action: "user.created_by_scim", TargetType: "user", TargetID: u.ID.String(), OrgID: &orgID,
			Details: map[string]any{"email": u.Email, "name": u.Name, "external_id": in.ExternalID, "active": in.Active}}); err != nil {
			return err
		}
		row, err := scimUserRow(ctx, tx, orgID, u.ID)
		if err != nil {
			return err
		}
		out = scimUser(row, nil)
		return nil
	})
	return out, err
}

// SCIMChangeUser changes a user the organization's token sees, in one
// transaction: change gets the user as it is and returns it as it must
// be (a replace, or PATCH operations applied; its error is returned as
// is). The link keeps externalId and the name's parts. An email or name
// change is made on the account when the organization owns it (an email
// change of another's is refused; a name change is left, the account's
// own). active false disables the account as DisableUser does — sessions
// ended, management and inference keys revoked, in this transaction —
// and active true enables it; both only for an account the organization
// owns.
func SCIMChangeUser(ctx context.Context, st *store.Store, actor Actor, orgID uuid.UUID, id string,
	change func(scim.User) (scim.User, error)) (scim.User, error) {
	var out scim.User
	uid, err := uuid.Parse(id)
	if err != nil {
		return out, errorf(NotFound, "user %s not found", id)
	}
	err = st.InTx(ctx, func(tx *store.Store) error {
		row, err := scimUserRow(ctx, tx, orgID, uid)
		if err != nil {
			return err
		}
		groups, err := scimGroupsOf(ctx, tx, orgID, uid)
		if err != nil {
			return err
		}
		cur := scimUser(row, groups)
		next, err := change(cur)
		if err != nil {
			return err
		}
		next.UserName = NormalizeEmail(next.UserName)
		owned, err := scimOwns(ctx, tx, orgID, &row.User)
		if err != nil {
			return err
		}
		u := &row.User
		now := store.Now()
		changed := map[string]any{}
		email, name := u.Email, u.Name
		if next.UserName != u.Email {
			if !owned {
				return errNotOwned(u.Email, "change the email of")
			}
			email, changed["email"] = next.UserName, next.UserName
		}
		if owned && next.Name() != u.Name {
			name, changed["name"] = next.Name(), next.Name()
		}
		if email != u.Email || name != u.Name {
			if err := tx.UpdateUserAccount(ctx, u.ID, email, name, now); errors.Is(err, store.ErrConflict) {
				return errorf(Conflict, "userName %s is taken", email)
			} else if err != nil {
				return err
			}
		}
		if err := tx.UpsertSCIMUser(ctx, &store.SCIMUser{OrgID: orgID, UserID: u.ID, ExternalID: next.ExternalID, GivenName: next.GivenName,
			FamilyName: next.FamilyName, CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		if next.ExternalID != cur.ExternalID {
			changed["external_id"] = next.ExternalID
		}
		switch {
		case cur.Active && !next.Active:
			if !owned {
				return errNotOwned(u.Email, "disable")
			}
			u.DisabledAt, u.UpdatedAt = &now, now
			if err := tx.SetUserDisabled(ctx, u.ID, &now, now); err != nil {
				return err
			}
			if err := stopAccount(ctx, tx, actor, u, now); err != nil {
				return err
			}
			// user.disabled is the instance's; the organization's log
			// says its provisioning did it.
			changed["active"] = false
		case !cur.Active && next.Active:
			if !owned {
				return errNotOwned(u.Email, "enable")
			}
			if err := tx.SetUserDisabled(ctx, u.ID, nil, now); err != nil {
				return err
			}
			if err := Audit(ctx, tx, actor, AuditEntry{Action: "user.enabled", TargetType: "user", TargetID: u.ID.String(), OrgID: &orgID,
				Details: map[string]any{"email": u.Email, "by": "scim"}}); err != nil {
				return err
			}
		}
		if len(changed) > 0 {
			if err := Audit(ctx, tx, actor, AuditEntry{Action: "user.updated_by_scim", TargetType: "user", TargetID: u.ID.String(), OrgID: &orgID,
				Details: changed}); err != nil {
				return err
			}
		}
		if row, err = scimUserRow(ctx, tx, orgID, uid); err != nil {
			return err
		}
		out = scimUser(row, groups)
		return nil
	})
	return out, err
}

// SCIMDeleteUser takes a person out of the organization: out of its SCIM
// groups (the memberships the mappings made go), their membership of the
// organization removed (its workspaces' too), the link forgotten; and
// the account disabled as DisableUser does when the organization owns it.
// An owner of the organization is not removed this way (Forbidden).
func SCIMDeleteUser(ctx context.Context, st *store.Store, actor Actor, orgID uuid.UUID, id string) error {
	uid, err := uuid.Parse(id)
	if err != nil {
		return errorf(NotFound, "user %s not found", id)
	}
	return st.InTx(ctx, func(tx *store.Store) error {
		row, err := scimUserRow(ctx, tx, orgID, uid)
		if err != nil {
			return err
		}
		u := &row.User
		owned, err := scimOwns(ctx, tx, orgID, u)
		if err != nil {
			return err
		}
		m, err := tx.GetMembership(ctx, orgID, uid)
		switch {
		case errors.Is(err, store.ErrNotFound):
			m = nil
		case err != nil:
			return err
		case m.Role == auth.OrgOwner:
			return errorf(Forbidden, "%s owns the organization: an owner is removed by another owner, not by provisioning", u.Email)
		}
		now := store.Now()
		if err := tx.DeleteSCIMUser(ctx, orgID, uid); err != nil {
			return err
		}
		if err := syncSCIMGrants(ctx, tx, actor, orgID, uid, now); err != nil {
			return err
		}
		if m != nil {
			if err := tx.DeleteMembership(ctx, orgID, uid); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		disabled := false
		if owned && u.DisabledAt == nil {
			u.DisabledAt, u.UpdatedAt = &now, now
			if err := tx.SetUserDisabled(ctx, u.ID, &now, now); err != nil {
				return err
			}
			if err := stopAccount(ctx, tx, actor, u, now); err != nil {
				return err
			}
			disabled = true
		}
		return Audit(ctx, tx, actor, AuditEntry{Action: "user.deprovisioned_by_scim", TargetType: "user", TargetID: u.ID.String(), OrgID: &orgID,
			Details: map[string]any{"email": u.Email, "membership_removed": m != nil, "account_disabled": disabled}})
	})
}

// SCIMGroups lists the organization's groups with their members.
func SCIMGroups(ctx context.Context, st *store.Store, orgID uuid.UUID) ([]scim.Group, error) {
	groups, err := st.ListSCIMGroups(ctx, orgID)
	if err != nil {
		return nil, err
	}
	members, err := st.ListSCIMGroupMembers(ctx, orgID, nil)
	if err != nil {
		return nil, err
	}
	by := map[uuid.UUID][]scim.Ref{}
	for _, m := range members {
		by[m.GroupID] = append(by[m.GroupID], scim.Ref{Value: m.UserID.String(), Display: m.Email})
	}
	out := make([]scim.Group, len(groups))
	for i := range groups {
		out[i] = scimGroup(&groups[i], by[groups[i].ID])
	}
	return out, nil
}

// SCIMGroup is one of the organization's groups, or NotFound.
func SCIMGroup(ctx context.Context, st *store.Store, orgID uuid.UUID, id string) (scim.Group, error) {
	g, err := scimGroupRow(ctx, st, orgID, id)
	if err != nil {
		return scim.Group{}, err
	}
	return scimGroupWithMembers(ctx, st, orgID, g)
}

func scimGroupRow(ctx context.Context, tx *store.Store, orgID uuid.UUID, id string) (*store.SCIMGroup, error) {
	gid, err := uuid.Parse(id)
	if err != nil {
		return nil, errorf(NotFound, "group %s not found", id)
	}
	g, err := tx.GetSCIMGroup(ctx, orgID, gid)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errorf(NotFound, "group %s not found", id)
	}
	return g, err
}

func scimGroupWithMembers(ctx context.Context, tx *store.Store, orgID uuid.UUID, g *store.SCIMGroup) (scim.Group, error) {
	members, err := tx.ListSCIMGroupMembers(ctx, orgID, &g.ID)
	if err != nil {
		return scim.Group{}, err
	}
	refs := make([]scim.Ref, len(members))
	for i, m := range members {
		refs[i] = scim.Ref{Value: m.UserID.String(), Display: m.Email}
	}
	return scimGroup(g, refs), nil
}

func scimGroup(g *store.SCIMGroup, members []scim.Ref) scim.Group {
	return scim.Group{ID: g.ID.String(), ExternalID: g.ExternalID, DisplayName: g.DisplayName, Members: members,
		Created: g.CreatedAt, Modified: g.UpdatedAt}
}

// scimMembers resolves member ids to the organization's users: an id the
// token does not see (no uuid, unknown, another organization's) is
// Unreadable, like unknown.
func scimMembers(ctx context.Context, tx *store.Store, orgID uuid.UUID, g scim.Group) ([]uuid.UUID, error) {
	ids := g.MemberIDs()
	out := make([]uuid.UUID, 0, len(ids))
	for _, s := range ids {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, errorf(Unreadable, "member %s is no user of this organization", s)
		}
		rows, err := tx.SCIMUsers(ctx, orgID, &id, "")
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return nil, errorf(Unreadable, "member %s is no user of this organization", s)
		}
		out = append(out, id)
	}
	return out, nil
}

// SCIMCreateGroup creates a group with its members and makes the
// memberships the identity providers' group mappings give its members.
// A name taken in the organization is a Conflict.
func SCIMCreateGroup(ctx context.Context, st *store.Store, actor Actor, orgID uuid.UUID, in scim.Group) (scim.Group, error) {
	var out scim.Group
	err := st.InTx(ctx, func(tx *store.Store) error {
		now := store.Now()
		g := &store.SCIMGroup{ID: uuid.New(), OrgID: orgID, DisplayName: in.DisplayName, ExternalID: in.ExternalID, CreatedAt: now, UpdatedAt: now}
		members, err := scimMembers(ctx, tx, orgID, in)
		if err != nil {
			return err
		}
		if err := tx.CreateSCIMGroup(ctx, g); errors.Is(err, store.ErrConflict) {
			return errorf(Conflict, "a group named %q exists", in.DisplayName)
		} else if err != nil {
			return err
		}
		if err := tx.SetSCIMGroupMembers(ctx, g.ID, members); err != nil {
			return err
		}
		if err := Audit(ctx, tx, actor, AuditEntry{Action: "scim_group.created", TargetType: "scim_group", TargetID: g.ID.String(), OrgID: &orgID,
			Details: map[string]any{"display_name": g.DisplayName, "external_id": g.ExternalID, "members": uuidStrings(members)}}); err != nil {
			return err
		}
		if err := syncSCIMGrantsOf(ctx, tx, actor, orgID, members, now); err != nil {
			return err
		}
		out, err = scimGroupWithMembers(ctx, tx, orgID, g)
		return err
	})
	return out, err
}

// SCIMChangeGroup changes one of the organization's groups in one
// transaction: change gets the group as it is and returns it as it must
// be (a replace, or PATCH operations applied). The memberships the
// mappings give follow, for every member it had or has.
func SCIMChangeGroup(ctx context.Context, st *store.Store, actor Actor, orgID uuid.UUID, id string,
	change func(scim.Group) (scim.Group, error)) (scim.Group, error) {
	var out scim.Group
	err := st.InTx(ctx, func(tx *store.Store) error {
		g, err := scimGroupRow(ctx, tx, orgID, id)
		if err != nil {
			return err
		}
		cur, err := scimGroupWithMembers(ctx, tx, orgID, g)
		if err != nil {
			return err
		}
		next, err := change(cur)
		if err != nil {
			return err
		}
		members, err := scimMembers(ctx, tx, orgID, next)
		if err != nil {
			return err
		}
		now := store.Now()
		g.DisplayName, g.ExternalID, g.UpdatedAt = next.DisplayName, next.ExternalID, now
		if err := tx.UpdateSCIMGroup(ctx, g); errors.Is(err, store.ErrConflict) {
			return errorf(Conflict, "a group named %q exists", next.DisplayName)
		} else if err != nil {
			return err
		}
		if err := tx.SetSCIMGroupMembers(ctx, g.ID, members); err != nil {
			return err
		}
		before := map[uuid.UUID]bool{}
		for _, m := range cur.MemberIDs() {
			before[uuid.MustParse(m)] = true
		}
		after := map[uuid.UUID]bool{}
		for _, m := range members {
			after[m] = true
		}
		added, removed := diffIDs(after, before), diffIDs(before, after)
		details := map[string]any{"display_name": g.DisplayName, "members_added": uuidStrings(added), "members_removed": uuidStrings(removed)}
		if cur.DisplayName != next.DisplayName {
			details["renamed_from"] = cur.DisplayName
		}
		if err := Audit(ctx, tx, actor, AuditEntry{Action: "scim_group.updated", TargetType: "scim_group", TargetID: g.ID.String(), OrgID: &orgID,
			Details: details}); err != nil {
			return err
		}
		affected := added
		affected = append(affected, removed...)
		if cur.DisplayName != next.DisplayName {
			// A new name may match other mappings: every member's
			// memberships follow.
			affected = uuidKeys(after)
			affected = append(affected, removed...)
		}
		if err := syncSCIMGrantsOf(ctx, tx, actor, orgID, affected, now); err != nil {
			return err
		}
		out, err = scimGroupWithMembers(ctx, tx, orgID, g)
		return err
	})
	return out, err
}

// SCIMDeleteGroup deletes one of the organization's groups; the
// memberships the mappings gave through it go.
func SCIMDeleteGroup(ctx context.Context, st *store.Store, actor Actor, orgID uuid.UUID, id string) error {
	return st.InTx(ctx, func(tx *store.Store) error {
		g, err := scimGroupRow(ctx, tx, orgID, id)
		if err != nil {
			return err
		}
		cur, err := scimGroupWithMembers(ctx, tx, orgID, g)
		if err != nil {
			return err
		}
		if err := tx.DeleteSCIMGroup(ctx, g.ID); err != nil {
			return err
		}
		if err := Audit(ctx, tx, actor, AuditEntry{Action: "scim_group.deleted", TargetType: "scim_group", TargetID: g.ID.String(), OrgID: &orgID,
			Details: map[string]any{"display_name": g.DisplayName, "members": cur.MemberIDs()}}); err != nil {
			return err
		}
		ids := make([]uuid.UUID, 0, len(cur.Members))
		for _, m := range cur.MemberIDs() {
			ids = append(ids, uuid.MustParse(m))
		}
		return syncSCIMGrantsOf(ctx, tx, actor, orgID, ids, store.Now())
	})
}

// scimMappings are the group mappings, of every identity provider (in
// name order), that name the organization: the only ones its SCIM groups
// may use.
func scimMappings(ctx context.Context, tx *store.Store, orgID uuid.UUID) ([]store.GroupMapping, error) {
	providers, err := tx.ListIdentityProviders(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.GroupMapping
	for i := range providers {
		for _, m := range GroupMappings(&providers[i]) {
			if m.OrgID == orgID {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// syncSCIMGrants brings the memberships the mappings made for a user's
// SCIM groups in the organization in line with those groups, as a
// sign-in does with its ID token's groups (applyMappings): new ones are
// made (unless one exists, made by hand or by a sign-in: it is left as
// it is), changed roles follow, those no longer mapped are removed; an
// organization's last active owner is never removed or demoted this way.
// scim_grants is the ledger, as sso_grants is a sign-in's.
func syncSCIMGrants(ctx context.Context, tx *store.Store, actor Actor, orgID, userID uuid.UUID, now time.Time) error {
	mappings, err := scimMappings(ctx, tx, orgID)
	if err != nil {
		return err
	}
	return syncSCIMGrantsWith(ctx, tx, actor, mappings, orgID, userID, now)
}

// syncSCIMGrantsOf is syncSCIMGrants for each of users, the mappings
// read once.
func syncSCIMGrantsOf(ctx context.Context, tx *store.Store, actor Actor, orgID uuid.UUID, users []uuid.UUID, now time.Time) error {
	if len(users) == 0 {
		return nil
	}
	mappings, err := scimMappings(ctx, tx, orgID)
	if err != nil {
		return err
	}
	for _, id := range users {
		if err := syncSCIMGrantsWith(ctx, tx, actor, mappings, orgID, id, now); err != nil {
			return err
		}
	}
	return nil
}

// syncSCIMGrantsWith is syncSCIMGrants with the organization's mappings
// read once for a group's many members.
func syncSCIMGrantsWith(ctx context.Context, tx *store.Store, actor Actor, mappings []store.GroupMapping, orgID, userID uuid.UUID, now time.Time) error {
	rows, err := tx.ListSCIMGroupsOfUser(ctx, orgID, userID)
	if err != nil {
		return err
	}
	groups := make([]string, len(rows))
	for i, r := range rows {
		groups[i] = r.DisplayName
	}
	existing, err := tx.ListSCIMGrants(ctx, orgID, userID)
	if err != nil {
		return err
	}
	recorded := make([]recordedGrant, len(existing))
	for i, g := range existing {
		recorded[i] = recordedGrant{ID: g.ID, Grant: Grant{OrgID: g.OrgID, WorkspaceID: g.WorkspaceID, Role: g.Role}}
	}
	_, err = reconcileGrants(ctx, tx, userID, DesiredGrants(mappings, groups), recorded, grantLedger{
		create: func(g Grant) error {
			return tx.CreateSCIMGrant(ctx, &store.SCIMGrant{ID: uuid.New(), OrgID: orgID, UserID: userID, WorkspaceID: g.WorkspaceID,
				Role: g.Role, CreatedAt: now})
		},
		updateRole: func(id uuid.UUID, role string) error { return tx.UpdateSCIMGrantRole(ctx, id, role) },
		remove:     func(id uuid.UUID) error { return tx.DeleteSCIMGrant(ctx, id) },
		audit:      func(action string, g Grant) error { return auditSCIMGrant(ctx, tx, actor, action, g, userID) },
	}, now)
	return err
}

func auditSCIMGrant(ctx context.Context, tx *store.Store, actor Actor, action string, g Grant, userID uuid.UUID) error {
	if g.WorkspaceID != nil {
		action = "workspace_" + action
	}
	return Audit(ctx, tx, actor, AuditEntry{Action: action, TargetType: "user", TargetID: userID.String(), OrgID: &g.OrgID,
		WorkspaceID: g.WorkspaceID, Details: map[string]any{"role": g.Role, "by": "group_mapping", "source": "scim"}})
}

func diffIDs(a, b map[uuid.UUID]bool) []uuid.UUID {
	var out []uuid.UUID
	for id := range a {
		if !b[id] {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func uuidKeys(m map[uuid.UUID]bool) []uuid.UUID { return diffIDs(m, nil) }

func uuidStrings(ids []uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}
