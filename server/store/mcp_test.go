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

// Each MCP tool call's usage event leaves one audit row, derived where
// the event is stored (issue 30): who, which server and tool, the outcome
// and the duration, never arguments; an event shipped twice is audited
// once, and a model call's event leaves none.
func TestToolCallAuditRows(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		org, ws, key, owner := uuid.New(), uuid.New(), uuid.New(), uuid.New()
		at := time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC)
		ev := func(endpoint, model, status string) store.UsageEvent {
			req := "req-" + uuid.NewString()[:8]
			return store.UsageEvent{ID: uuid.New(), OrgID: org, WorkspaceID: ws, InferenceKeyID: &key, OwnerID: &owner, Model: model,
				Provider: "mcp", Status: status, LatencyMS: 12, CostNanoUSD: 2_000_000, OccurredAt: at, Bucket: store.UsageBucket(at),
				ReceivedAt: at, RequestID: &req, Endpoint: &endpoint}
		}
		call, chat := ev("mcp", "mcp/github/search", "ok"), ev("chat.completions", "openai/gpt-4o-mini", "ok")
		for range 2 {
			if _, err := st.InsertUsageEvents(ctx, []store.UsageEvent{call, chat}); err != nil {
				t.Fatal(err)
			}
		}
		rows, _, err := st.ListAuditEvents(ctx, &org, store.PageQuery{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 {
			t.Fatalf("want one audit row, got %+v", rows)
		}
		r := rows[0]
		if r.Action != "mcp.tool_called" || r.TargetID != "github/search" || r.ActorID == nil || *r.ActorID != owner ||
			r.WorkspaceID == nil || *r.WorkspaceID != ws || r.Details["status"] != "ok" || r.Details["tool"] != "search" ||
			r.Details["inference_key_id"] != key.String() || r.Details["arguments"] != nil {
			t.Fatalf("audit row %+v", r)
		}
	})
}
