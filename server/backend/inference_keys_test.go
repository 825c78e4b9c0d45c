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

func TestInferenceKeyRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		rpm := func(n int64) backend.RateLimitsPatch {
			return backend.RateLimitsPatch{Set: []string{"requests_per_minute"}, To: store.RateLimits{RPM: &n}}
		}
		ws := *w.ws
		ws.RateLimits = rpm(100).Onto(store.RateLimits{})
		if err := w.st.UpdateWorkspace(ctx, &ws); err != nil {
			t.Fatal(err)
		}
		otherWS, err := backend.CreateWorkspace(ctx, w.st, w.system, backend.WorkspaceCreate{OrgID: w.org.ID, Name: "Other"})
		if err != nil {
			t.Fatal(err)
		}
		member := backend.User(w.bob, false, nil, "req-member")
		member.Rights = auth.WorkspaceRoleRights(auth.WorkspaceMember)
		if member.Rights.Has(auth.MembersManage) || !w.admin.Rights.Has(auth.MembersManage) {
			t.Fatal("the actors do not tell the owner rule apart")
		}
		keys := map[string]*store.InferenceKey{}
		issue := func(name string, by backend.Actor, owner uuid.UUID, limits backend.RateLimitsPatch) func() error {
			return func() error {
				in := backend.InferenceKeyCreate{Workspace: &ws, Owner: owner, Name: name, Limits: limits}
				if name == "elsewhere" {
					in.Workspace = otherWS
				}
				k, token, err := backend.IssueInferenceKey(ctx, w.st, by, in)
				if err == nil && (token == "" || k.UserID != owner || k.WorkspaceID != in.Workspace.ID) {
					t.Errorf("%s: %+v", name, k)
				}
				keys[name] = k
				return err
			}
		}
		update := func(name string, in backend.InferenceKeyUpdate) func() error {
			return func() error {
				_, err := backend.UpdateInferenceKey(ctx, w.st, member, &ws, keys[name].ID, in)
				return err
			}
		}
		revoke := func(name string) func() error {
			return func() error {
				k, err := backend.RevokeInferenceKey(ctx, w.st, member, &ws, keys[name].ID)
				if err == nil && k.RevokedAt == nil {
					t.Errorf("%s reads back unrevoked", name)
				}
				return err
			}
		}
		renamed := "renamed"
		var none backend.RateLimitsPatch

		checkRules(t, w.st, w.org.ID, []rule{
			{name: "limits above the workspace's", op: issue("greedy", member, w.bob, rpm(101)), kind: invalid},
			{name: "a member issues for someone else", op: issue("theirs", member, w.alice, none), kind: backend.Forbidden},
			{name: "for a suspended member", op: issue("inert", w.admin, w.inert, none), kind: invalid},
			{name: "for another organization's member", op: issue("outsider", w.admin, w.outsider, none), kind: invalid},
			{name: "a member issues their own", op: issue("own", member, w.bob, rpm(100)), action: "inference_key.issued", by: &member},
			{name: "a member manager issues for someone else", op: issue("for-alice", w.admin, w.alice, none), action: "inference_key.issued", by: &w.admin},
			{name: "in another workspace", op: issue("elsewhere", w.system, w.bob, none), action: "inference_key.issued", by: &w.system},
			{name: "raise a key above the workspace", op: update("own", backend.InferenceKeyUpdate{Limits: rpm(500)}), kind: invalid},
			{name: "rename a key above a lowered workspace limit", op: func() error {
				ws.RateLimits = rpm(10).Onto(ws.RateLimits)
				if err := w.st.UpdateWorkspace(ctx, &ws); err != nil {
					return err
				}
				return update("own", backend.InferenceKeyUpdate{Name: &renamed})()
			}, action: "inference_key.updated", by: &member},
			{name: "update another workspace's key", op: update("elsewhere", backend.InferenceKeyUpdate{Name: &renamed}), kind: backend.NotFound},
			{name: "read another workspace's key", op: func() error {
				_, err := backend.InferenceKeyIn(ctx, w.st, ws.ID, keys["elsewhere"].ID)
				return err
			}, kind: backend.NotFound},
			{name: "revoke", op: revoke("own"), action: "inference_key.revoked", by: &member},
			{name: "revoke again", op: revoke("own")},
			{name: "revoke another workspace's key", op: revoke("elsewhere"), kind: backend.NotFound},
		})
	})
}
