package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
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

// A tool call's arguments reach its audit row only while the workspace's
// mcp_audit_arguments is true, read where the event is stored: an event
// carrying arguments into a workspace that does not record them (a stale
// bundle, a plane that should not have sent them) leaves a row without
// them; arguments too large to carry leave their size and
// arguments_omitted; a model call's event is never touched.
func TestToolCallAuditArguments(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		o := fixture.NewOrg(t, st, fixture.Keyring(t), "acme")
		ws := o.Workspace("agents")
		at := time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC)
		ev := func(args string, n int64) store.UsageEvent {
			endpoint := "mcp"
			return store.UsageEvent{ID: uuid.New(), OrgID: o.ID, WorkspaceID: ws, Model: "mcp/github/search", Provider: "mcp",
				Status: "ok", OccurredAt: at, Bucket: store.UsageBucket(at), ReceivedAt: at, Endpoint: &endpoint,
				ToolArguments: json.RawMessage(args), ToolArgumentsBytes: n}
		}
		audited := func(e store.UsageEvent) map[string]any {
			t.Helper()
			if _, err := st.InsertUsageEvents(ctx, []store.UsageEvent{e}); err != nil {
				t.Fatal(err)
			}
			rows, _, err := st.ListAuditEvents(ctx, &o.ID, store.PageQuery{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if r.Details["usage_event_id"] == e.ID.String() {
					return r.Details
				}
			}
			t.Fatalf("no audit row for %s", e.ID)
			return nil
		}
		// Off (the default): never the arguments, even when sent.
		if d := audited(ev(`{"q":"secret"}`, 14)); d["arguments"] != nil || d["arguments_bytes"] != nil || d["arguments_omitted"] != nil {
			t.Fatalf("setting off, row has arguments: %v", d)
		}
		w, err := st.GetWorkspace(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		on := true
		w.MCPAuditArguments = &on
		if err := st.UpdateWorkspace(ctx, w); err != nil {
			t.Fatal(err)
		}
		d := audited(ev(`{"q":"is:open","n":2}`, 21))
		if args, _ := d["arguments"].(map[string]any); args["q"] != "is:open" || args["n"] != float64(2) || d["arguments_bytes"] != float64(21) {
			t.Fatalf("setting on, row %v", d)
		}
		if d := audited(ev("", 100_000)); d["arguments"] != nil || d["arguments_omitted"] != "too_large" || d["arguments_bytes"] != float64(100_000) {
			t.Fatalf("too large, row %v", d)
		}
		// An event without arguments (sent while the setting was off).
		if d := audited(ev("", 0)); d["arguments"] != nil || d["arguments_omitted"] != nil {
			t.Fatalf("no arguments sent, row %v", d)
		}
	})
}
