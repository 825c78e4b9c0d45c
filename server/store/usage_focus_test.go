package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// TestUsageEventsForExportPages: every event of the window once, in order,
// across pages whose boundary falls between events of the same instant;
// none of another organization or outside the window.
func TestUsageEventsForExportPages(t *testing.T) {
	defer store.SetUsageExportPage(store.SetUsageExportPage(3))
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		org, ws := uuid.New(), uuid.New()
		at := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
		var events []store.UsageEvent
		for i := range 10 {
			when := at.Add(time.Duration(i/2) * time.Minute) // two events per instant
			events = append(events, store.UsageEvent{ID: uuid.New(), OrgID: org, WorkspaceID: ws, Model: "openai/gpt", Provider: "openai",
				RequestedModel: "openai/gpt", Status: "ok", OccurredAt: when, ReceivedAt: when, Bucket: store.UsageBucket(when), CostNanoUSD: int64(i + 1)})
		}
		outside := store.UsageEvent{ID: uuid.New(), OrgID: org, WorkspaceID: ws, Model: "m", Provider: "p", RequestedModel: "m", Status: "ok",
			OccurredAt: at.Add(48 * time.Hour), ReceivedAt: at, Bucket: store.UsageBucket(at.Add(48 * time.Hour)), CostNanoUSD: 1000}
		otherOrg := outside
		otherOrg.ID, otherOrg.OrgID, otherOrg.OccurredAt, otherOrg.Bucket = uuid.New(), uuid.New(), at, store.UsageBucket(at)
		if _, err := st.InsertUsageEvents(ctx, append(events, outside, otherOrg)); err != nil {
			t.Fatal(err)
		}
		seen := map[uuid.UUID]bool{}
		var pages int
		var sum int64
		err := st.UsageEventsForExport(ctx, org, nil, at.Truncate(24*time.Hour), at.Truncate(24*time.Hour).Add(24*time.Hour), func(p []store.UsageEvent) error {
			pages++
			for _, e := range p {
				if seen[e.ID] {
					t.Errorf("event %s twice", e.ID)
				}
				seen[e.ID] = true
				sum += e.CostNanoUSD
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != 10 || sum != 55 || pages != 4 {
			t.Fatalf("%d events, cost %d, %d pages", len(seen), sum, pages)
		}
	})
}
