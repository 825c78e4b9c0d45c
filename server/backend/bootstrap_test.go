package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/validate"
)

// TestBootstrapRules: an instance is bootstrapped once, by a valid owner,
// and no recovery key exists before it has one.
func TestBootstrapRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		// The instance row, as gw serve makes it on start.
		if _, err := st.GetInstanceState(ctx); err != nil {
			t.Fatal(err)
		}
		boot := backend.System("gw serve --bootstrap-email")
		recover := func(email string, perms ...string) error {
			_, token, err := backend.CreateRecoveryKey(ctx, st, backend.System("gw admin create-key"), email, perms, "recovery")
			if err == nil && !strings.HasPrefix(token, auth.ManagementKeyPrefix) {
				t.Errorf("recovery token %q", token)
			}
			return err
		}
		if err := recover("", "organizations.read"); err == nil {
			t.Fatal("a recovery key before the instance has an owner")
		}
		in := backend.BootstrapInput{Email: "Owner@Example.test ", Password: "correct horse battery"}
		bad := in
		bad.Email = "not an email"
		if _, err := backend.Bootstrap(ctx, st, boot, bad, nil); !isValidation(err) {
			t.Fatalf("bootstrap with a bad email: %v, want a validation error", err)
		}
		b, err := backend.Bootstrap(ctx, st, boot, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b.User.Email != "owner@example.test" || b.User.InstanceRole != auth.InstanceOwner || b.Token == "" || b.Workspace.OrgID != b.Organization.ID {
			t.Fatalf("bootstrapped: %+v", b)
		}
		owner := backend.User(b.User.ID, false, nil, boot.RequestID)
		if e := auditEvents(t, st, &b.Organization.ID); len(e) != 1 || e[0].Action != "instance.bootstrapped" || !sameActor(e[0], owner) {
			t.Fatalf("bootstrap audit: %+v", e)
		}
		if _, err := backend.Bootstrap(ctx, st, boot, in, nil); !errors.Is(err, backend.ErrAlreadyBootstrapped) {
			t.Fatalf("a second bootstrap: %v", err)
		}

	})
}

func isValidation(err error) bool { _, ok := validate.AsError(err); return ok }
