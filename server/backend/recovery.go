package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/store"
)

// CreateRecoveryKey mints an instance-scope key straight in the database,
// for an operator who has lost every credential (gw admin create-key). The
// key belongs to the instance owner or admin with the given email, or to
// the oldest owner when email is empty. The token is returned once.
func CreateRecoveryKey(ctx context.Context, st *store.Store, actor Actor, email string, perms []string, label string) (*store.ManagementKey, string, error) {
	for _, p := range perms {
		if !auth.Known(p) {
			return nil, "", fmt.Errorf("unknown permission %q", p)
		}
	}
	if len(perms) == 0 {
		return nil, "", errors.New("at least one permission is required")
	}
	if n := len([]rune(label)); n < 1 || n > 80 {
		return nil, "", errors.New("the label must be 1 to 80 characters")
	}
	var key *store.ManagementKey
	var token string
	err := st.InTx(ctx, func(tx *store.Store) error {
		owner, err := recoveryOwner(ctx, tx, email)
		if err != nil {
			return err
		}
		key, token, err = MintManagementKey(ctx, tx, actor, KeySpec{Owner: owner.ID, Permissions: perms, Label: label,
			Via: "recovery", Action: "management_key.recovery_issued"})
		return err
	})
	return key, token, err
}

func recoveryOwner(ctx context.Context, tx *store.Store, email string) (*store.User, error) {
	if email != "" {
		u, err := tx.GetUserByEmail(ctx, NormalizeEmail(email))
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
