package backend

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// serviceAccountRole is every service account's role: what one may
// actually do is set by its keys' ceilings, which never exceed the
// issuer's own rights.
const serviceAccountRole = auth.OrgAdmin

// ServiceAccountCreate is a service account of an organization with its
// first management key. The operation sets the key's owner (the account)
// and place (the organization).
type ServiceAccountCreate struct {
	Org  *store.Organization
	Name string
	Key  KeyIssue
}

// ServiceAccountCreated is the account, its membership, and its first key
// with the key's token, shown once.
type ServiceAccountCreated struct {
	Account    *store.User
	Membership *store.Membership
	Key        *store.ManagementKey
	Token      string
}

// CreateServiceAccount creates a principal managed by the organization,
// a member of it and of no other, with a key the actor may issue
// (IssueManagementKey's rules): all of it, or none of it.
func CreateServiceAccount(ctx context.Context, st *store.Store, actor Actor, in ServiceAccountCreate) (*ServiceAccountCreated, error) {
	out := &ServiceAccountCreated{}
	err := st.InTx(ctx, func(tx *store.Store) error {
		now := store.Now()
		id := uuid.New()
		sa := &store.User{
			ID: id, Email: "sa-" + id.String() + "@" + in.Org.Slug + ".service-accounts.invalid", Name: in.Name,
			InstanceRole: auth.InstanceMember, ServiceAccount: true, ManagingOrgID: &in.Org.ID, CreatedAt: now, UpdatedAt: now,
		}
		if err := tx.CreateUser(ctx, sa); err != nil {
			return err
		}
		m := &store.Membership{OrgID: in.Org.ID, UserID: sa.ID, Role: serviceAccountRole, Status: auth.MembershipActive, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateMembership(ctx, m); err != nil {
			return err
		}
		if err := Audit(ctx, tx, actor, AuditEntry{Action: "service_account.created", TargetType: "user", TargetID: sa.ID.String(),
			OrgID: &in.Org.ID, Details: map[string]any{"name": in.Name}}); err != nil {
			return err
		}
		key := in.Key
		key.Owner, key.OrgID, key.WorkspaceID = sa.ID, &in.Org.ID, nil
		k, token, err := issueKey(ctx, tx, actor, key)
		if err != nil {
			return err
		}
		*out = ServiceAccountCreated{Account: sa, Membership: m, Key: k, Token: token}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ServiceAccountIn is the organization's service account id; one deleted,
// managed by another organization, or a person is not found.
func ServiceAccountIn(ctx context.Context, st *store.Store, orgID, id uuid.UUID) (*store.User, error) {
	u, err := st.GetUser(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (!u.ServiceAccount || u.DeletedAt != nil ||
		u.ManagingOrgID == nil || *u.ManagingOrgID != orgID)) {
		return nil, errorf(NotFound, "service account %s not found", id)
	}
	return u, err
}

// DeleteServiceAccount retires the organization's service account: its
// keys are revoked and its memberships and sessions removed; the record
// stays, marked deleted, so its revoked keys still read back with their
// owner.
func DeleteServiceAccount(ctx context.Context, st *store.Store, actor Actor, orgID, id uuid.UUID) (*store.User, error) {
	var u *store.User
	err := st.InTx(ctx, func(tx *store.Store) error {
		var err error
		if u, err = ServiceAccountIn(ctx, tx, orgID, id); err != nil {
			return err
		}
		now := store.Now()
		if err := tx.DeleteServiceAccount(ctx, u.ID, now); err != nil {
			return err
		}
		u.DeletedAt, u.UpdatedAt = &now, now
		return Audit(ctx, tx, actor, AuditEntry{Action: "service_account.deleted", TargetType: "user", TargetID: u.ID.String(),
			OrgID: &orgID, Details: map[string]any{"name": u.Name}})
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}
