package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// CreateRecoveryKey mints an instance-scope key straight in the database,
// for an operator who has lost every credential (gw admin create-key). The
// key belongs to the instance owner with the given email, or to the oldest
// owner when email is empty.
func CreateRecoveryKey(ctx context.Context, st *store.Store, email string, perms []string, label string) (wire.ManagementKey, error) {
	for _, p := range perms {
		if !auth.Known(p) {
			return wire.ManagementKey{}, fmt.Errorf("unknown permission %q", p)
		}
	}
	if len(perms) == 0 {
		return wire.ManagementKey{}, errors.New("at least one permission is required")
	}
	if n := len([]rune(label)); n < 1 || n > 80 {
		return wire.ManagementKey{}, errors.New("the label must be 1 to 80 characters")
	}
	var out wire.ManagementKey
	err := st.InTx(ctx, func(tx *store.Store) error {
		owner, err := recoveryOwner(ctx, tx, email)
		if err != nil {
			return err
		}
		token, prefix, hash := auth.NewToken(auth.ManagementKeyPrefix)
		now := store.Now()
		k := &store.ManagementKey{ID: uuid.New(), UserID: owner.ID, Prefix: prefix, TokenHash: hash,
			Permissions: orderedPermissions(perms), Label: label, CreatedAt: now, UpdatedAt: now}
		if err := tx.CreateManagementKey(ctx, k); err != nil {
			return err
		}
		r := &Request{ctx: ctx, ID: "admin-create-key"}
		if err := r.audit(tx, auditEntry{Action: "management_key.recovery_issued", TargetType: "management_key", TargetID: k.ID.String(),
			Details: map[string]any{"label": label, "prefix": prefix, "user_id": owner.ID.String()}}); err != nil {
			return err
		}
		out = toManagementKey(k, time.Now())
		out.Token = token
		return nil
	})
	return out, err
}

func recoveryOwner(ctx context.Context, tx *store.Store, email string) (*store.User, error) {
	if email != "" {
		u, err := tx.GetUserByEmail(ctx, normalizeEmail(email))
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("no user with email %s", email)
		}
		if err != nil {
			return nil, err
		}
		if u.InstanceRole != auth.InstanceOwner && u.InstanceRole != auth.InstanceAdmin {
			return nil, fmt.Errorf("%s is not an instance owner or admin", email)
		}
		return u, nil
	}
	users, err := tx.ListUsers(ctx)
	if err != nil {
		return nil, err
	}
	for i := range users {
		if users[i].InstanceRole == auth.InstanceOwner {
			return &users[i], nil
		}
	}
	return nil, errors.New("the instance has no owner yet; bootstrap it first")
}
