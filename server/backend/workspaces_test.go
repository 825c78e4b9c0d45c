package backend_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// world is an organization with a workspace and two members, and the
// actors the rules tell apart: an admin holding every workspace right, a
// viewer holding read rights only, and an operator command.
type world struct {
	st              *store.Store
	org             *fixture.Org
	ws              *store.Workspace
	alice, bob      uuid.UUID
	admin, viewer   backend.Actor
	system          backend.Actor
	outsider, inert uuid.UUID
}

func newWorld(t *testing.T, db *bun.DB) *world {
	t.Helper()
	ctx := context.Background()
	st := store.New(db)
	org := fixture.NewOrg(t, st, fixture.Keyring(t), "acme")
	wsID := org.Workspace("main")
	ws, err := st.GetWorkspace(ctx, wsID)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{st: st, org: org, ws: ws, alice: org.Member(auth.MembershipActive), bob: org.Member(auth.MembershipActive),
		inert: org.Member(auth.MembershipSuspended), system: backend.System("test")}
	other := fixture.NewOrg(t, st, fixture.Keyring(t), "globex")
	w.outsider = other.Member(auth.MembershipActive)
	w.admin = backend.User(w.alice, false, nil, "req-admin")
	w.admin.Rights = auth.WorkspaceRoleRights(auth.WorkspaceAdmin)
	w.viewer = backend.User(w.bob, false, nil, "req-viewer")
	w.viewer.Rights = auth.WorkspaceRoleRights(auth.WorkspaceViewer)
	return w
}

// kindOf is the domain refusal's kind, 0 for none (and -1 for an error
// that is not a refusal).
func kindOf(err error) backend.Kind {
	var be *backend.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &be):
		return be.Kind
	}
	return -1
}

// audited reports whether the last audit event of the organization is
// action, by the actor's user and request.
func (w *world) audited(t *testing.T, action string, actor backend.Actor) bool {
	t.Helper()
	events, _, err := w.st.ListAuditEvents(context.Background(), &w.org.ID, store.PageQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return len(events) == 1 && events[0].Action == action && events[0].RequestID == actor.RequestID
}

func TestWorkspaceRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		taken := "main"
		tests := []struct {
			name   string
			op     func() error
			kind   backend.Kind
			action string // audited on success
			actor  backend.Actor
		}{
			{"create derives a free slug", func() error {
				ws, err := backend.CreateWorkspace(ctx, w.st, w.admin, backend.WorkspaceCreate{OrgID: w.org.ID, Name: "Main"})
				if err == nil && ws.Slug != "main-2" {
					t.Errorf("slug %q, want main-2 (main is taken)", ws.Slug)
				}
				return err
			}, 0, "workspace.created", w.admin},
			{"create with a taken slug", func() error {
				_, err := backend.CreateWorkspace(ctx, w.st, w.admin, backend.WorkspaceCreate{OrgID: w.org.ID, Name: "X", Slug: &taken})
				return err
			}, backend.Conflict, "", w.admin},
			{"update to a taken slug", func() error {
				other, err := backend.CreateWorkspace(ctx, w.st, w.admin, backend.WorkspaceCreate{OrgID: w.org.ID, Name: "Other"})
				if err != nil {
					return err
				}
				_, err = backend.UpdateWorkspace(ctx, w.st, w.admin, *other, backend.WorkspaceUpdate{Slug: &taken})
				return err
			}, backend.Conflict, "", w.admin},
			{"add an active member", func() error {
				_, err := backend.AddWorkspaceMember(ctx, w.st, w.admin, w.ws, w.bob, auth.WorkspaceMember)
				return err
			}, 0, "workspace_member.added", w.admin},
			{"add them again", func() error {
				_, err := backend.AddWorkspaceMember(ctx, w.st, w.admin, w.ws, w.bob, auth.WorkspaceMember)
				return err
			}, backend.Conflict, "", w.admin},
			{"add a suspended member", func() error {
				_, err := backend.AddWorkspaceMember(ctx, w.st, w.admin, w.ws, w.inert, auth.WorkspaceMember)
				return err
			}, backend.NotFound, "", w.admin},
			{"add another organization's member", func() error {
				_, err := backend.AddWorkspaceMember(ctx, w.st, w.admin, w.ws, w.outsider, auth.WorkspaceMember)
				return err
			}, backend.NotFound, "", w.admin},
			{"a viewer grants admin", func() error {
				_, err := backend.AddWorkspaceMember(ctx, w.st, w.viewer, w.ws, w.alice, auth.WorkspaceAdmin)
				return err
			}, backend.Forbidden, "", w.viewer},
			{"a viewer changes an admin's role", func() error {
				if _, err := backend.AddWorkspaceMember(ctx, w.st, w.system, w.ws, w.alice, auth.WorkspaceAdmin); err != nil {
					return err
				}
				_, err := backend.UpdateWorkspaceMember(ctx, w.st, w.viewer, w.ws, w.alice, auth.WorkspaceViewer)
				return err
			}, backend.Forbidden, "", w.viewer},
			{"update a non-member", func() error {
				_, err := backend.UpdateWorkspaceMember(ctx, w.st, w.admin, w.ws, w.outsider, auth.WorkspaceMember)
				return err
			}, backend.NotFound, "", w.admin},
			{"an operator command grants anything", func() error {
				_, err := backend.UpdateWorkspaceMember(ctx, w.st, w.system, w.ws, w.bob, auth.WorkspaceAdmin)
				return err
			}, 0, "workspace_member.updated", w.system},
			{"a viewer removes an admin", func() error {
				_, err := backend.RemoveWorkspaceMember(ctx, w.st, w.viewer, w.ws, w.bob)
				return err
			}, backend.Forbidden, "", w.viewer},
			{"remove a member", func() error {
				_, err := backend.RemoveWorkspaceMember(ctx, w.st, w.admin, w.ws, w.bob)
				return err
			}, 0, "workspace_member.removed", w.admin},
			{"remove a non-member", func() error {
				_, err := backend.RemoveWorkspaceMember(ctx, w.st, w.admin, w.ws, w.bob)
				return err
			}, backend.NotFound, "", w.admin},
			{"delete the workspace", func() error { return backend.DeleteWorkspace(ctx, w.st, w.admin, w.ws) }, 0, "workspace.deleted", w.admin},
		}
		for _, tt := range tests {
			err := tt.op()
			if got := kindOf(err); got != tt.kind {
				t.Fatalf("%s: %v (kind %d), want kind %d", tt.name, err, got, tt.kind)
			}
			if tt.action != "" && !w.audited(t, tt.action, tt.actor) {
				t.Fatalf("%s: the last audit event is not %s by %s", tt.name, tt.action, tt.actor.RequestID)
			}
		}
	})
}
