package usage_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/server/usage"
)

// Past the bound of tag sets an organization's rollups keep, new sets'
// events still count in every total, no tag filter matches them, a tag
// breakdown reports them in the over_tag_limit row, and the answers say so.
func TestTagSetBound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		old := store.MaxUsageTagSets
		store.MaxUsageTagSets = 2
		t.Cleanup(func() { store.MaxUsageTagSets = old })
		st := store.New(db)
		ctx := context.Background()
		org, ws := uuid.New(), uuid.New()
		at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
		sets := []map[string]string{{"team": "a"}, {"team": "b"}, {"team": "c"}, {"team": "a", "env": "prod"}, nil}
		for i, s := range sets {
			e := store.UsageEvent{ID: uuid.New(), OrgID: org, WorkspaceID: ws, Model: "m/x", Provider: "m", Status: "ok",
				CostNanoUSD: int64(i+1) * 1e9, OccurredAt: at, Bucket: store.UsageBucket(at), ReceivedAt: at, RequestedModel: "m/x"}
			if s != nil {
				id := tags.SetID(org, s)
				e.Tags, e.TagSetID = s, &id
			}
			// One batch each, so the first two sets are the registered ones.
			if _, err := st.InsertUsageEvents(ctx, []store.UsageEvent{e}); err != nil {
				t.Fatal(err)
			}
		}
		for _, rolled := range []bool{false, true} {
			if rolled {
				if _, err := st.RollUpUsage(ctx, 1000); err != nil {
					t.Fatal(err)
				}
			}
			win, err := usage.WindowFor("custom", time.UTC, at, usage.Custom{StartDate: "2026-11-01", EndDate: "2026-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			q := usage.Query{Window: win, Filter: store.UsageFilter{OrgID: org}}
			b, err := usage.Breakdown(ctx, st, q, "tag:team")
			if err != nil {
				t.Fatal(err)
			}
			// c ($3) and {a, prod} ($4) are past the bound: $7 over it; b $2, a $1;
			// the untagged event $5.
			want := []struct {
				key  string
				none bool
				over bool
				cost string
			}{{"", false, true, "7"}, {"", true, false, "5"}, {"b", false, false, "2"}, {"a", false, false, "1"}}
			if len(b.Rows) != len(want) || b.Note == "" {
				t.Fatalf("rolled %v: %+v", rolled, b)
			}
			for i, w := range want {
				r := b.Rows[i]
				if r.Key != w.key || r.NoValue != w.none || r.OverTagLimit != w.over || r.CostUSD != w.cost {
					t.Fatalf("rolled %v: row %d %+v, want %+v", rolled, i, r, w)
				}
			}
			q.Filter.Tags = []store.TagPair{{Key: "team", Value: "c"}}
			rep, err := usage.Report(ctx, st, q, at)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Totals.Requests != 0 || rep.Note == "" {
				t.Fatalf("rolled %v: a filter on a set past the bound: %+v", rolled, rep)
			}
			q.Filter.Tags = nil
			if rep, err = usage.Report(ctx, st, q, at); err != nil || rep.Totals.Requests != 5 || rep.Totals.CostUSD != "15" || rep.Note != "" {
				t.Fatalf("rolled %v: totals %+v %v", rolled, rep, err)
			}
		}
	})
}
