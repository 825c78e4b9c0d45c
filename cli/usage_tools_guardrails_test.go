package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// gw usage report --by tool breaks the MCP tools' spend down (issue 30)
// and gw usage guardrails counts each guardrail's outcomes (issue 32),
// against the real API on both databases.
func TestUsageByToolAndGuardrails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		org, ws, owner := e.boot.Organization.ID, e.boot.Workspace.ID, e.boot.User.ID
		now := time.Now().UTC()
		ev := func(model, provider, cost string, guardrails ...map[string]any) map[string]any {
			if guardrails == nil {
				guardrails = []map[string]any{}
			}
			return map[string]any{"id": uuid.NewString(), "org_id": org, "workspace_id": ws, "owner_id": owner,
				"model": model, "provider": provider, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
				"cache_write_tokens": 0, "cost_usd": cost, "status": "ok", "latency_ms": 12,
				"occurred_at": now.Add(-time.Minute).Format(time.RFC3339Nano), "guardrails": guardrails}
		}
		g := func(outcome string, detectors ...string) map[string]any {
			if detectors == nil {
				detectors = []string{}
			}
			return map[string]any{"id": "0b8e7c1e-0000-4000-8000-0000000000bb", "name": "pii-guard", "stage": "input",
				"outcome": outcome, "detectors": detectors}
		}
		body, _ := json.Marshal(map[string]any{"events": []any{
			ev("mcp/github/create_issue", "mcp", "0.05"),
			ev("mcp/github/create_issue", "mcp", "0.05"),
			ev("mcp/search/query", "mcp", "0.001"),
			ev("openai/gpt-4o-mini", "openai", "0.5", g("blocked", "pii")),
			ev("openai/gpt-4o-mini", "openai", "0.5", g("redacted", "pii")),
			ev("openai/gpt-4o-mini", "openai", "0.5", g("redacted", "pii")),
			ev("openai/gpt-4o-mini", "openai", "0.5", g("passed")),
		}})
		e.postAsOwner(t, "/api/v1/data-plane/usage-events", body)

		out := e.ok("usage", "report", "--by", "tool", "--period", "7d")
		want := "github/create_issue\t2\t0\t0\t0\t0\t0.10\nsearch/query\t1\t0\t0\t0\t0\t0.001\n"
		if out != want {
			t.Fatalf("gw usage report --by tool:\n%q\nwant\n%q", out, want)
		}
		b := decodeJSONOut[wire.UsageBreakdown](t, e.ok("usage", "report", "--by", "tool", "--period", "7d", "-o", "json"))
		if b.By != "tool" || len(b.Rows) != 2 || b.Rows[0].Key != "mcp/github/create_issue" {
			t.Fatalf("json: %+v", b)
		}
		r := e.gw("", "usage", "report", "--by", "tool", "--provider", "openai")
		if r.code != ExitOK || r.out != "" || !strings.Contains(r.errOut, "no MCP tool call") {
			t.Fatalf("tools under another provider: %d %q %q", r.code, r.out, r.errOut)
		}

		out = e.ok("usage", "guardrails", "--period", "7d")
		if want := "pii-guard (deleted)\tinput\t4\t1\t2\t0\t0\t0\t1\t0b8e7c1e-0000-4000-8000-0000000000bb\tpii 3\n"; out != want {
			t.Fatalf("gw usage guardrails:\n%q\nwant\n%q", out, want)
		}
		rep := decodeJSONOut[wire.GuardrailReport](t, e.ok("usage", "guardrails", "-o", "json"))
		if len(rep.Rows) != 1 || rep.Rows[0].Blocked != 1 || rep.Rows[0].Redacted != 2 {
			t.Fatalf("json: %+v", rep)
		}
		r = e.gw("", "usage", "guardrails", "--period", "year")
		if r.code != ExitUsage || !strings.Contains(r.errOut, "--period") {
			t.Fatalf("a bad period: %d %q", r.code, r.errOut)
		}
	})
}
