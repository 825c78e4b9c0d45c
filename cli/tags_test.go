package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// gw inference-keys sets, changes and shows a key's tags (issue 21).
func TestInferenceKeyTagsCLI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		e.ok("inference-keys", "create", "--name", "search-api", "--tag", "team=search", "--tag", "env=prod")
		out := e.ok("inference-keys", "list")
		if !strings.Contains(out, "\tenv=prod,team=search\t") {
			t.Fatalf("list shows no tags:\n%s", out)
		}
		k := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "update", "search-api", "--tag", "team=ads", "--untag", "env", "--tag", "feature=chat", "-o", "json"))
		if len(k.Tags) != 2 || k.Tags["team"] != "ads" || k.Tags["feature"] != "chat" {
			t.Fatalf("update: %+v", k.Tags)
		}
		if out := e.ok("inference-keys", "get", "search-api"); !strings.Contains(out, "feature=chat,team=ads") {
			t.Fatalf("get:\n%s", out)
		}
		k = decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "update", "search-api", "--no-tags", "-o", "json"))
		if len(k.Tags) != 0 {
			t.Fatalf("--no-tags: %+v", k.Tags)
		}
		// The server's rules are the CLI's: a bad key is its 422, named.
		r := e.code(ExitError, "", "inference-keys", "update", "search-api", "--tag", "Team=x")
		if !strings.Contains(r.errOut, "tags.Team") {
			t.Fatalf("a bad tag: %s", r.errOut)
		}
		e.code(ExitUsage, "", "inference-keys", "create", "--name", "x", "--tag", "novalue")
	})
}

// tagUsage ships events with tags as a data plane would, on 2026-03-10
// and 11 (UTC): team search $1.5 and $0.25 (the 11th), ads $3, and one
// event without tags, $0.000000001.
func tagUsage(t *testing.T, e *resEnv) {
	t.Helper()
	ev := func(at string, cost string, tags map[string]string) map[string]any {
		m := map[string]any{"id": uuid.NewString(), "org_id": e.boot.Organization.ID, "workspace_id": e.boot.Workspace.ID,
			"owner_id": e.boot.User.ID, "model": "openai/gpt-4o-mini", "provider": "openai", "input_tokens": 10, "output_tokens": 5,
			"cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": cost, "status": "ok", "latency_ms": 3, "occurred_at": at}
		if tags != nil {
			m["tags"] = tags
		}
		return m
	}
	body, _ := json.Marshal(map[string]any{"events": []any{
		ev("2026-03-10T09:00:00Z", "1.5", map[string]string{"team": "search", "env": "prod"}),
		ev("2026-03-11T09:00:00Z", "0.25", map[string]string{"team": "search", "env": "staging"}),
		ev("2026-03-10T12:00:00Z", "3", map[string]string{"team": "ads", "env": "prod"}),
		ev("2026-03-11T12:00:00Z", "0.000000001", nil),
	}})
	e.postAsOwner(t, "/api/v1/data-plane/usage-events", body)
}

// gw usage report --by tag:KEY and --tag, and gw usage export --format
// csv, on both databases (issue 21).
func TestUsageByTagCLI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		tagUsage(t, e)
		rng := []string{"usage", "report", "--start-date", "2026-03-10", "--end-date", "2026-03-11"}
		b := decodeJSONOut[wire.UsageBreakdown](t, e.ok(append(rng, "--by", "tag:team", "-o", "json")...))
		if b.By != "tag:team" || len(b.Rows) != 3 || b.Rows[0].Key != "ads" || b.Rows[1].Key != "search" || b.Rows[1].CostUSD != "1.75" ||
			!b.Rows[2].NoValue || b.Rows[2].CostUSD != "0.000000001" {
			t.Fatalf("by tag:team: %+v", b)
		}
		out := e.ok(append(rng, "--by", "tag:team")...)
		for _, want := range []string{"ads\t1\t", "search\t2\t", "(no tag)\t1\t"} {
			if !strings.Contains(out, want) {
				t.Fatalf("table lacks %q:\n%s", want, out)
			}
		}
		r := decodeJSONOut[wire.UsageReport](t, e.ok(append(rng, "--tag", "team=search", "--tag", "env=prod", "--json")...))
		if r.Totals.Requests != 1 || r.Totals.CostUSD != "1.5" {
			t.Fatalf("--tag filters: %+v", r.Totals)
		}
		e.code(ExitUsage, "", append(rng, "--tag", "team")...)
		e.code(ExitUsage, "", append(rng, "--by", "color")...)

		csvOut := e.ok("usage", "export", "--format", "csv", "--start-date", "2026-03-10", "--end-date", "2026-03-11", "--by", "tag:team")
		want := "date,tag:team,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,over_tag_limit\n" +
			"2026-03-10,ads,1,10,5,0,0,3,false\n" +
			"2026-03-10,search,1,10,5,0,0,1.5,false\n" +
			"2026-03-11,search,1,10,5,0,0,0.25,false\n" +
			"2026-03-11,,1,10,5,0,0,0.000000001,false\n"
		if csvOut != want {
			t.Fatalf("export by tag:\n%s\nwant\n%s", csvOut, want)
		}
		csvOut = e.ok("usage", "export", "--format", "csv", "--start-date", "2026-03-10", "--end-date", "2026-03-11", "--tag", "env=prod")
		want = "date,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd\n" +
			"2026-03-10,2,20,10,0,0,4.5\n2026-03-11,0,0,0,0,0,0\n"
		if csvOut != want {
			t.Fatalf("export by day:\n%s\nwant\n%s", csvOut, want)
		}
		e.code(ExitUsage, "", "usage", "export", "--format", "xlsx")
	})
}

// The dashboard over the real API, on both databases: the tag breakdown
// and, after enter on a row, the tag filter.
func TestUsageDashboardTags(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		at := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
		ev := func(cost string, tags map[string]string) map[string]any {
			m := map[string]any{"id": uuid.NewString(), "org_id": e.boot.Organization.ID, "workspace_id": e.boot.Workspace.ID,
				"owner_id": e.boot.User.ID, "model": "openai/gpt-4o-mini", "provider": "openai", "input_tokens": 10, "output_tokens": 5,
				"cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": cost, "status": "ok", "latency_ms": 3, "occurred_at": at}
			if tags != nil {
				m["tags"] = tags
			}
			return m
		}
		body, _ := json.Marshal(map[string]any{"events": []any{ev("7", map[string]string{"team": "search"}),
			ev("2", map[string]string{"team": "ads"}), ev("1", nil)}})
		e.postAsOwner(t, "/api/v1/data-plane/usage-events", body)

		c, err := client.New(client.Options{Server: e.url, Token: e.boot.ManagementKey.Token})
		if err != nil {
			t.Fatal(err)
		}
		m := tui.New(tui.Options{Source: tui.ClientSource{Client: c, Org: e.boot.Organization.Slug}, Org: "acme",
			Period: "30d", By: "tag:team", TagKeys: []string{"team"}, Clock: time.UTC})
		var run func(cmd tea.Cmd)
		run = func(cmd tea.Cmd) {
			if cmd == nil {
				return
			}
			switch msg := cmd().(type) {
			case nil:
			case tea.BatchMsg:
				for _, c := range msg {
					run(c)
				}
			default:
				_, next := m.Update(msg)
				run(next)
			}
		}
		_, cmd := m.Update(tea.WindowSizeMsg{Width: 140, Height: 40})
		run(cmd)
		run(m.Init())
		view := func() string { return ansi.Strip(m.View()) }
		for _, want := range []string{"Tag team", "search", "ads", "(no tag)", "$10"} {
			if !strings.Contains(view(), want) {
				t.Fatalf("the dashboard lacks %q:\n%s", want, view())
			}
		}
		_, cmd = m.Update(tea.KeyMsg{Type: tea.KeyEnter}) // search, the largest
		run(cmd)
		v := view()
		if !strings.Contains(v, "filters: tag team=search") || !strings.Contains(v, "$7") || strings.Contains(v, "(no tag)") {
			t.Fatalf("filtered by team=search:\n%s", v)
		}
	})
}

// gw budgets create-for-tag makes the policy over the keys carrying the
// tag, on both databases.
func TestBudgetsCreateForTagCLI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		k := decodeJSONOut[wire.InferenceKey](t, e.ok("inference-keys", "create", "--name", "search-api", "--tag", "team=search", "-o", "json"))
		r := e.gw("", "budgets", "create-for-tag", "team=search", "--amount", "100", "--period", "month")
		if r.code != ExitOK || !strings.Contains(r.errOut, "budget-team-search") || !strings.Contains(r.errOut, "(1 now)") {
			t.Fatalf("create-for-tag: %d %s %s", r.code, r.out, r.errOut)
		}
		// gw policies list counts the same keys, without the marker
		// (issue 26, row 12: it said 2).
		mustContain(t, "policies list", e.ok("policies", "list"), "\tselected_keys (1, tag team=search)\t")
		// Money with two decimals at least (issue 26, row 12: 0.30 was 0.3).
		r = e.code(ExitOK, "", "budgets", "create-for-tag", "team=ads", "--amount", "0.3", "--period", "day", "-o", "table")
		mustContain(t, "create-for-tag -o table", r.out, "keys        0\n", "amount_usd  0.30\n")
		mustContain(t, "create-for-tag's stderr", r.errOut, "a 0.30 USD day budget")
		mustContain(t, "policies list, no key tagged", e.ok("policies", "list"), "\tselected_keys (0, tag team=ads)\t")
		pol := e.ok("policies", "get", "budget-team-search", "-o", "json")
		if !strings.Contains(pol, `"tag:team=search"`) || !strings.Contains(pol, k.ID.String()) || !strings.Contains(pol, `"shared"`) {
			t.Fatalf("the policy: %s", pol)
		}
		e.ok("inference-keys", "update", "search-api", "--untag", "team")
		if pol := e.ok("policies", "get", "budget-team-search", "-o", "json"); strings.Contains(pol, k.ID.String()) {
			t.Fatalf("the key left the tag but not the budget: %s", pol)
		}
		e.code(ExitUsage, "", "budgets", "create-for-tag", "team", "--amount", "1", "--period", "month")
		e.code(ExitUsage, "", "budgets", "create-for-tag", "team=x", "--amount", "1", "--period", "week")
	})
}
