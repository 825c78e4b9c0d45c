package backend_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// pendingSignIn is a CLI sign-in as gw login starts it.
func pendingSignIn(t *testing.T, st *store.Store, code string) *store.CLIAuthorization {
	t.Helper()
	now := store.Now()
	a := &store.CLIAuthorization{ID: uuid.New(), PollSecretHash: uuid.NewString(), UserCode: code, Label: "laptop",
		Status: store.CLIPending, IntervalSeconds: 5, ExpiresAt: now.Add(10 * time.Minute), CreatedAt: now}
	if err := st.CreateCLIAuthorization(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestCLISignInRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		pendingSignIn(t, w.st, "ABCD-EFGH")
		pendingSignIn(t, w.st, "JKLM-NPQR")
		everything := auth.NewSet(auth.All...)
		alice := backend.CLIApprover{Actor: backend.User(w.alice, false, nil, "req-approve"),
			KeyScope: auth.Scope{Level: auth.LevelInstance}, Ceiling: everything}
		keyForGlobex := alice
		keyForGlobex.KeyScope = auth.Scope{Level: auth.LevelOrganization, OrgID: uuid.New()}
		noCeiling := alice
		noCeiling.Ceiling = auth.NewSet()
		approve := func(who backend.CLIApprover, code string, in backend.CLIApproval) func() error {
			return func() error {
				in.UserCode = code
				_, _, err := backend.ApproveCLISignIn(ctx, w.st, who, in)
				return err
			}
		}
		acme := backend.CLIApproval{OrgRef: w.org.ID.String()}
		deny := func(code string) func() error {
			return func() error { _, err := backend.DenyCLISignIn(ctx, w.st, alice.Actor, code); return err }
		}

		checkRules(t, w.st, w.org.ID, []rule{
			{name: "approve a code nobody started", op: approve(alice, "ZZZZ-ZZZZ", acme), kind: backend.NotFound},
			{name: "approve for an organization the approver is not in", op: approve(alice, "abcdefgh",
				backend.CLIApproval{OrgRef: "globex"}), kind: backend.NotFound},
			{name: "approve for an organization the approver's key does not cover", op: approve(keyForGlobex, "abcd-efgh", acme), kind: backend.Forbidden},
			{name: "approve with a credential that carries no rights", op: approve(noCeiling, "abcd-efgh", acme), kind: backend.NotFound},
			{name: "approve an instance key as an instance member", op: approve(alice, "abcd-efgh",
				backend.CLIApproval{Instance: true}), kind: backend.Forbidden},
			{name: "approve for a workspace of another organization", op: approve(alice, "abcd-efgh",
				backend.CLIApproval{OrgRef: w.org.ID.String(), WorkspaceID: &[]uuid.UUID{uuid.New()}[0]}), kind: backend.NotFound},
			{name: "approve, typed in lower case without the dash", op: approve(alice, "abcdefgh", acme),
				action: "cli_authorization.approved", by: &alice.Actor},
			{name: "approve twice", op: approve(alice, "ABCD-EFGH", acme), kind: backend.Conflict},
			{name: "deny once approved", op: deny("ABCD-EFGH"), kind: backend.Conflict},
		})

		a, err := backend.FindCLISignIn(ctx, w.st, "ABCD-EFGH")
		if err != nil {
			t.Fatal(err)
		}
		if a.OrgID == nil || *a.OrgID != w.org.ID || a.UserID == nil || *a.UserID != w.alice || len(a.Permissions) == 0 {
			t.Fatalf("approved sign-in: org %v user %v permissions %v", a.OrgID, a.UserID, a.Permissions)
		}
		for _, p := range a.Permissions {
			if !auth.OrgRoleRights(auth.OrgMember).Has(auth.Permission(p)) {
				t.Errorf("the key would carry %s, beyond the approver's member role", p)
			}
		}

		// A key of alice's in the same scope is replaced; bob's is not.
		mine := &store.ManagementKey{ID: uuid.New(), UserID: w.alice, OrgID: &w.org.ID}
		d, err := backend.DeliverCLISignIn(ctx, w.st, a, mine, "req-poll")
		if err != nil || d.Token == "" || d.Org == nil || d.Org.ID != w.org.ID {
			t.Fatalf("delivery: %+v %v", d, err)
		}
		if d.Replaced == nil || *d.Replaced != mine.ID {
			t.Fatalf("replaced %v, want alice's current key %v", d.Replaced, mine.ID)
		}
		if _, err := backend.DeliverCLISignIn(ctx, w.st, a, nil, "req-poll-2"); !errors.Is(err, backend.ErrDelivered) {
			t.Fatalf("second delivery: %v, want ErrDelivered", err)
		}

		if err := deny("JKLM-NPQR")(); err != nil {
			t.Fatal(err)
		}
		if err := approve(alice, "JKLM-NPQR", acme)(); kindOf(err) != backend.Conflict {
			t.Fatalf("approve after deny: %v, want a conflict", err)
		}
	})
}

func TestCLISignInDeliveryKeepsOthersKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		alice := backend.CLIApprover{Actor: backend.User(w.alice, false, nil, "req"),
			KeyScope: auth.Scope{Level: auth.LevelInstance}, Ceiling: auth.NewSet(auth.All...)}
		for i, c := range []struct {
			name string
			key  *store.ManagementKey
		}{
			{"another user's key", &store.ManagementKey{ID: uuid.New(), UserID: w.bob, OrgID: &w.org.ID}},
			{"alice's instance-scope key", &store.ManagementKey{ID: uuid.New(), UserID: w.alice}},
			{"alice's key for a workspace", &store.ManagementKey{ID: uuid.New(), UserID: w.alice, OrgID: &w.org.ID, WorkspaceID: &w.ws.ID}},
		} {
			code := fmt.Sprintf("KEEP-000%d", i)
			pendingSignIn(t, w.st, code)
			a, _, err := backend.ApproveCLISignIn(ctx, w.st, alice, backend.CLIApproval{UserCode: code, OrgRef: w.org.ID.String()})
			if err != nil {
				t.Fatal(err)
			}
			d, err := backend.DeliverCLISignIn(ctx, w.st, a, c.key, "req")
			if err != nil || d.Token == "" {
				t.Fatalf("%s: %+v %v", c.name, d, err)
			}
			if d.Replaced != nil {
				t.Errorf("%s was replaced", c.name)
			}
		}
	})
}
