package backend_test

import (
	"context"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func TestTagBudgetRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		var created *store.Policy
		create := func(amount, period string) func() error {
			return func() error {
				p, _, err := backend.CreateTagBudget(ctx, w.st, w.system, backend.TagBudgetCreate{Workspace: w.ws, Name: "search " + period + amount,
					TagKey: "team", TagValue: "search", AmountUSD: amount, Period: period})
				if err == nil {
					created = p
				}
				return err
			}
		}
		issue := func(name string, tags map[string]string) func() error {
			return func() error {
				_, _, err := backend.IssueInferenceKey(ctx, w.st, w.system, backend.InferenceKeyCreate{Workspace: w.ws, Owner: w.alice, Name: name, Tags: tags})
				return err
			}
		}
		checkRules(t, w.st, w.org.ID, []rule{
			{name: "an amount that is not a decimal", op: create("lots", "month"), kind: invalid},
			{name: "a period that is not day or month", op: create("100", "fortnight"), kind: invalid},
			{name: "a budget for a tag no key carries yet", op: create("100", "month"), action: "tag_budget.created", by: &w.system, events: 2},
			{name: "a key with the tag joins it (the policy's update audited before the key)", op: issue("search-1", map[string]string{"team": "search"}), action: "inference_key.issued", by: &w.system, events: 2},
			{name: "a key with another tag does not", op: issue("ads-1", map[string]string{"team": "ads"}), action: "inference_key.issued", by: &w.system},
		})
		p, err := w.st.GetPolicy(ctx, w.ws.ID, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Definition, `"tag:team=search"`) || strings.Count(p.Definition, "-") < 4 {
			t.Fatalf("the tag budget's key list: %s, want the marker and search-1's id", p.Definition)
		}
	})
}
