package backend_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// TestRecoveryKeyRules: a recovery key goes only to an instance owner or
// admin, with known permissions.
func TestRecoveryKeyRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		if _, err := st.GetInstanceState(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := backend.Bootstrap(ctx, st, backend.System("test"), backend.BootstrapInput{Email: "owner@example.test", Password: "correct horse battery"}, nil); err != nil {
			t.Fatal(err)
		}
		recover := func(email string, perms ...string) error {
			_, token, err := backend.CreateRecoveryKey(ctx, st, backend.System("gw admin create-key"), email, perms, "recovery")
			if err == nil && !strings.HasPrefix(token, auth.ManagementKeyPrefix) {
				t.Errorf("recovery token %q", token)
			}
			return err
		}
		now := store.Now()
		member := &store.User{ID: uuid.New(), Email: "member@example.test", Name: "m", InstanceRole: auth.InstanceMember, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateUser(ctx, member); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name  string
			email string
			perms []string
			ok    bool
		}{
			{"an unknown permission", "", []string{"everything"}, false},
			{"no permission", "", nil, false},
			{"for a mere member", "member@example.test", []string{"organizations.read"}, false},
			{"for nobody", "ghost@example.test", []string{"organizations.read"}, false},
			{"for the oldest owner", "", []string{"organizations.read"}, true},
			{"for the owner by email, in any case", "OWNER@example.test", []string{"organizations.read"}, true},
		} {
			if err := recover(c.email, c.perms...); (err == nil) != c.ok {
				t.Errorf("recovery key %s: %v", c.name, err)
			}
		}
	})
}
