package backend_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestPolicyRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		definition := func(text string) policy.Definition {
			def, err := policy.ParseDefinitionJSON([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			return def
		}
		openaiOnly := definition(`{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"providers","names":["openai"]}}]}`)
		closed := definition(`{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"deny","message":"closed"}}]}`)
		otherWS, err := backend.CreateWorkspace(ctx, w.st, w.system, backend.WorkspaceCreate{OrgID: w.org.ID, Name: "Other"})
		if err != nil {
			t.Fatal(err)
		}
		policies := map[string]*store.Policy{}
		create := func(name string, ws *store.Workspace) func() error {
			return func() error {
				p, err := backend.CreatePolicy(ctx, w.st, w.admin, backend.PolicyCreate{Workspace: ws, Name: name, Enabled: true, Definition: openaiOnly})
				policies[name] = p
				return err
			}
		}
		update := func(name string, in backend.PolicyUpdate) func() error {
			return func() error {
				p, err := backend.UpdatePolicy(ctx, w.st, w.admin, w.ws, policies[name].ID, in)
				if err == nil && in.Definition != nil && p.Definition != canonical(t, *in.Definition) {
					t.Errorf("stored definition %s", p.Definition)
				}
				return err
			}
		}
		enable := func(name string, on bool) func() error {
			return func() error {
				p, err := backend.SetPolicyEnabled(ctx, w.st, w.admin, w.ws, policies[name].ID, on)
				if err == nil && p.Enabled != on {
					t.Errorf("%s enabled %v, want %v", name, p.Enabled, on)
				}
				return err
			}
		}
		del := func(name string) func() error {
			return func() error { _, err := backend.DeletePolicy(ctx, w.st, w.admin, w.ws, policies[name].ID); return err }
		}
		taken := "first"

		checkRules(t, w.st, w.org.ID, []rule{
			{name: "create", op: create("first", w.ws), action: "policy.created", by: &w.admin},
			{name: "create under a taken name", op: create("first", w.ws), kind: backend.Conflict},
			{name: "the same name in another workspace", op: create("first-elsewhere", otherWS), action: "policy.created", by: &w.admin},
			{name: "create another", op: create("second", w.ws), action: "policy.created", by: &w.admin},
			{name: "rename to a taken name", op: update("second", backend.PolicyUpdate{Name: &taken}), kind: backend.Conflict},
			{name: "change the definition", op: update("second", backend.PolicyUpdate{Definition: &closed}), action: "policy.updated", by: &w.admin},
			{name: "update another workspace's policy", op: update("first-elsewhere", backend.PolicyUpdate{Definition: &closed}), kind: backend.NotFound},
			{name: "enable an enabled policy", op: enable("second", true)},
			{name: "disable", op: enable("second", false), action: "policy.disabled", by: &w.admin},
			{name: "disable again", op: enable("second", false)},
			{name: "enable", op: enable("second", true), action: "policy.enabled", by: &w.admin},
			{name: "disable another workspace's policy", op: enable("first-elsewhere", false), kind: backend.NotFound},
			{name: "read another workspace's policy", op: func() error {
				_, err := backend.PolicyIn(ctx, w.st, w.ws.ID, policies["first-elsewhere"].ID)
				return err
			}, kind: backend.NotFound},
			{name: "delete another workspace's policy", op: del("first-elsewhere"), kind: backend.NotFound},
			{name: "delete", op: del("second"), action: "policy.deleted", by: &w.admin},
			{name: "delete again", op: del("second"), kind: backend.NotFound},
		})
		for _, e := range auditEvents(t, w.st, &w.org.ID) {
			if e.Action == "policy.updated" && e.Details["definition_changed"] != true {
				t.Fatalf("the update's audit does not say the definition changed: %v", e.Details)
			}
		}
	})
}

func canonical(t *testing.T, def policy.Definition) string {
	t.Helper()
	b, err := def.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
