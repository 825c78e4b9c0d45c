package backend_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestMemberRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		owner, admin := w.system, backend.User(w.alice, false, nil, "req-admin")
		admin.Rights = auth.OrgRoleRights(auth.OrgAdmin)
		str := func(s string) *string { return &s }
		user, err := w.st.GetUser(ctx, w.outsider) // a member of globex only
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name   string
			op     func() error
			kind   backend.Kind
			action string
		}{
			{"add an existing user by email", func() error {
				_, err := backend.AddMember(ctx, w.st, admin, backend.MemberAdd{OrgID: w.org.ID, Email: str(" " + user.Email + " "), Role: auth.OrgMember})
				return err
			}, 0, "member.added"},
			{"add them again", func() error {
				_, err := backend.AddMember(ctx, w.st, admin, backend.MemberAdd{OrgID: w.org.ID, UserID: &user.ID, Role: auth.OrgMember})
				return err
			}, backend.Conflict, ""},
			{"add nobody", func() error {
				_, err := backend.AddMember(ctx, w.st, admin, backend.MemberAdd{OrgID: w.org.ID, Email: str("nobody@example.test"), Role: auth.OrgMember})
				return err
			}, backend.NotFound, ""},
			{"an admin makes an owner", func() error {
				_, err := backend.UpdateMember(ctx, w.st, admin, w.org.ID, user.ID, backend.MemberUpdate{Role: str(auth.OrgOwner)})
				return err
			}, backend.Forbidden, ""},
			{"an owner makes an owner", func() error {
				_, err := backend.UpdateMember(ctx, w.st, owner, w.org.ID, user.ID, backend.MemberUpdate{Role: str(auth.OrgOwner)})
				return err
			}, 0, "member.updated"},
			{"an admin removes an owner", func() error {
				_, err := backend.RemoveMember(ctx, w.st, admin, w.org.ID, user.ID)
				return err
			}, backend.Forbidden, ""},
			{"the last owner steps down", func() error {
				_, err := backend.UpdateMember(ctx, w.st, owner, w.org.ID, user.ID, backend.MemberUpdate{Role: str(auth.OrgMember)})
				return err
			}, backend.Conflict, ""},
			{"the last owner is suspended", func() error {
				_, err := backend.UpdateMember(ctx, w.st, owner, w.org.ID, user.ID, backend.MemberUpdate{Status: str(auth.MembershipSuspended)})
				return err
			}, backend.Conflict, ""},
			{"the last owner is removed", func() error {
				_, err := backend.RemoveMember(ctx, w.st, owner, w.org.ID, user.ID)
				return err
			}, backend.Conflict, ""},
			{"update a non-member", func() error {
				_, err := backend.UpdateMember(ctx, w.st, owner, w.org.ID, uuid.New(), backend.MemberUpdate{Role: str(auth.OrgMember)})
				return err
			}, backend.NotFound, ""},
			{"remove a member", func() error {
				_, err := backend.RemoveMember(ctx, w.st, admin, w.org.ID, w.bob)
				return err
			}, 0, "member.removed"},
		}
		for _, tt := range tests {
			err := tt.op()
			if got := kindOf(err); got != tt.kind {
				t.Fatalf("%s: %v (kind %d), want kind %d", tt.name, err, got, tt.kind)
			}
			if tt.action == "" {
				continue
			}
			events, _, err := w.st.ListAuditEvents(ctx, &w.org.ID, store.PageQuery{Limit: 1})
			if err != nil || len(events) != 1 || events[0].Action != tt.action {
				t.Fatalf("%s: audit %+v %v", tt.name, events, err)
			}
		}
	})
}
