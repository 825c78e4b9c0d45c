package publish_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// Key tags and a workspace's required tags travel in the bundle (issue
// 21), so remote data planes tag usage as the control plane's own does;
// without them the bundle's bytes are what they were.
func TestCompileCarriesTags(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newCompileEnv(t, db)
		o := e.org
		ws := o.Workspace("main")
		owner := o.Member(auth.MembershipActive)
		_, tagged := o.Key(ws, owner, nil)
		_, plain := o.Key(ws, owner, nil)
		k, err := e.st.GetInferenceKey(ctx, ws, tagged)
		if err != nil {
			t.Fatal(err)
		}
		k.Tags = store.Tags{"team": "search", "env": "prod"}
		if err := e.st.UpdateInferenceKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		w, err := e.st.GetWorkspace(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		w.RequiredTags = store.Strings{"team"}
		if err := e.st.UpdateWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		_, body := e.compile(t)
		for _, bk := range body.Keys {
			switch bk.ID {
			case tagged:
				if len(bk.Tags) != 2 || bk.Tags["team"] != "search" {
					t.Errorf("tagged key %+v", bk.Tags)
				}
			case plain:
				if bk.Tags != nil {
					t.Errorf("a key without tags carries %v", bk.Tags)
				}
			}
		}
		if len(body.Workspaces) != 1 || len(body.Workspaces[0].RequiredTags) != 1 || body.Workspaces[0].RequiredTags[0] != "team" {
			t.Errorf("workspaces %+v", body.Workspaces)
		}
	})
}

// A workspace's tag values and its tag budgets travel in the bundle (issue
// 28): a tag budget only while its policy is enabled. Without them the
// workspace's bytes are what they were.
func TestCompileCarriesTagRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newCompileEnv(t, db)
		o := e.org
		ws := o.Workspace("main")
		_, body := e.compile(t)
		if w := body.Workspaces[0]; w.TagValues != nil || w.TagBudgets != nil {
			t.Fatalf("a workspace without tag rules carries %+v", w)
		}
		w, err := e.st.GetWorkspace(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		w.TagValues = store.TagValues{"env": {"prod", "staging"}}
		if err := e.st.UpdateWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		policyID := o.Policy(ws, "budget-team-ads", true, `{"target":{"kind":"selected_keys","key_ids":["tag:team=ads"]},"rules":[`+
			`{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"1","period":"day","aggregation":"shared"}}]}`)
		if err := e.st.CreateTagBudget(ctx, &store.TagBudget{PolicyID: policyID, OrgID: o.ID, WorkspaceID: ws, TagKey: "team", TagValue: "ads",
			CreatedAt: store.Now()}); err != nil {
			t.Fatal(err)
		}
		_, body = e.compile(t)
		got := body.Workspaces[0]
		if len(got.TagValues) != 1 || len(got.TagValues["env"]) != 2 || len(got.TagBudgets) != 1 ||
			got.TagBudgets[0] != (bundle.TagBudget{PolicyID: policyID, TagKey: "team", TagValue: "ads"}) {
			t.Fatalf("workspace %+v", got)
		}
		o.SetPolicyEnabled(ws, policyID, false)
		if _, body = e.compile(t); body.Workspaces[0].TagBudgets != nil {
			t.Fatalf("a disabled tag budget is carried: %+v", body.Workspaces[0].TagBudgets)
		}
	})
}
