package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/tui"
	"github.com/gw-gateway/gw/wire"
)

// usageFake answers the two usage paths (and a workspace lookup) the way
// the control plane does: {"data": …}, 401 without the key, 422 for a
// time zone it does not know. It records the queries.
type usageFake struct {
	t       *testing.T
	url     string
	cfg     string
	wsID    uuid.UUID
	mu      sync.Mutex
	queries map[string]url.Values
}

const usageFakeToken = "sk-cp-usagefake"

var usageDay = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

func fakeReport() wire.UsageReport {
	c := func(req int64, cost string) wire.UsageCounters {
		return wire.UsageCounters{Requests: req, InputTokens: req * 100, OutputTokens: req * 10, CacheReadTokens: req, CacheWriteTokens: 0, CostUSD: cost}
	}
	return wire.UsageReport{
		Totals:     c(30, "1.250000000"),
		Comparison: c(24, "1.000000000"),
		Daily: []wire.UsageDay{
			{Date: usageDay, UsageCounters: c(10, "0.500000000")},
			{Date: usageDay.AddDate(0, 0, 1), UsageCounters: c(20, "0.750000000")},
		},
		Period: wire.UsagePeriod{
			StartAt: usageDay, EndAt: usageDay.AddDate(0, 0, 2),
			PreviousStartAt: usageDay.AddDate(0, 0, -2), PreviousEndAt: usageDay,
			Timezone: "UTC",
		},
		UpdatedAt: usageDay.Add(50 * time.Hour),
	}
}

func newUsageFake(t *testing.T) *usageFake {
	t.Helper()
	u := &usageFake{t: t, wsID: uuid.MustParse("0b9c5f5e-1111-4222-8333-444455556666"), queries: map[string]url.Values{},
		cfg: filepath.Join(t.TempDir(), "config.yaml")}
	write := func(w http.ResponseWriter, status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+usageFakeToken {
			write(w, 401, map[string]any{"detail": "missing or invalid credential"})
			return
		}
		u.mu.Lock()
		u.queries[r.URL.Path] = r.URL.Query()
		u.mu.Unlock()
		q := r.URL.Query()
		if q.Get("timezone") == "Mars/Olympus" {
			write(w, 422, map[string]any{"detail": []map[string]any{{"loc": []any{"query", "timezone"}, "msg": "unknown time zone", "type": "value_error", "input": "Mars/Olympus"}}})
			return
		}
		switch r.URL.Path {
		case "/api/v1/organizations/acme/reports/usage":
			write(w, 200, map[string]any{"data": fakeReport()})
		case "/api/v1/organizations/acme/reports/usage/breakdown":
			rep := fakeReport()
			write(w, 200, map[string]any{"data": wire.UsageBreakdown{By: q.Get("by"), Period: rep.Period, Rows: []wire.UsageBreakdownRow{
				{Key: "openai/gpt-4o", UsageCounters: wire.UsageCounters{Requests: 20, InputTokens: 2000, OutputTokens: 200, CostUSD: "1.000000000"}},
				{Key: "", UsageCounters: wire.UsageCounters{Requests: 10, InputTokens: 1000, OutputTokens: 100, CostUSD: "0.250000000"}},
			}}})
		case "/api/v1/organizations/acme/workspaces/prod":
			write(w, 200, map[string]any{"data": wire.Workspace{ID: u.wsID, Name: "Production", Slug: "prod"}})
		default:
			write(w, 404, map[string]any{"detail": "not found"})
		}
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	t.Setenv("GW_SERVER", srv.URL)
	t.Setenv("GW_TOKEN", usageFakeToken)
	t.Setenv("GW_ORG", "acme")
	t.Setenv("GW_CONTEXT", "")
	t.Setenv("GW_WORKSPACE", "")
	return u
}

func (u *usageFake) query(path string) url.Values {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.queries[path]
}

func (u *usageFake) gw(ios *cmdutil.IOStreams, args ...string) gwResult {
	u.t.Helper()
	var out, errOut bytes.Buffer
	ios.Out, ios.ErrOut = &out, &errOut
	if ios.In == nil {
		ios.In = strings.NewReader("")
	}
	code := Run(context.Background(), &cmdutil.Factory{IO: ios, ConfigPath: u.cfg}, args)
	return gwResult{code: code, out: out.String(), errOut: errOut.String()}
}

func TestUsageReportRunTable(t *testing.T) {
	u := newUsageFake(t)

	// Piped: tab-separated rows with every column (the cache ones too), no
	// header or title, exact values (money with two decimals at least).
	r := u.gw(&cmdutil.IOStreams{}, "usage", "report", "--period", "7d", "--timezone", "Europe/Paris", "--model", "openai/gpt-4o", "--workspace-filter", "prod")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	want := strings.Join([]string{
		"2026-05-01\t10\t1000\t100\t10\t0\t0.50",
		"2026-05-02\t20\t2000\t200\t20\t0\t0.75",
		"total\t30\t3000\t300\t30\t0\t1.25",
		"previous\t24\t2400\t240\t24\t0\t1.00",
		"change\t+25.0%\t+25.0%\t+25.0%\t+25.0%\t—\t+25.0%",
	}, "\n") + "\n"
	if r.out != want {
		t.Fatalf("piped table:\n%s\nwant:\n%s", r.out, want)
	}
	q := u.query("/api/v1/organizations/acme/reports/usage")
	if q.Get("period") != "7d" || q.Get("timezone") != "Europe/Paris" || q.Get("model_id") != "openai/gpt-4o" || q.Get("workspace_id") != u.wsID.String() {
		t.Fatalf("query %v (the slug must be resolved to the workspace id)", q)
	}

	// On a terminal: a title with the period, aligned columns with a header.
	r = u.gw(&cmdutil.IOStreams{ForceTerminal: true}, "usage", "report")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	for _, s := range []string{
		"Usage May 1 – May 2, 2026 (UTC), compared with Apr 29 – Apr 30, 2026",
		"DATE        REQUESTS  INPUT   OUTPUT  COST (USD)",
		"total       30        3000",
		"change      +25.0%",
	} {
		if !strings.Contains(r.out, s) {
			t.Fatalf("terminal table lacks %q:\n%s", s, r.out)
		}
	}
	if q := u.query("/api/v1/organizations/acme/reports/usage"); q.Get("period") != "30d" || q.Has("workspace_id") || q.Has("timezone") {
		t.Fatalf("default query %v", q)
	}
}

func TestUsageReportRunJSON(t *testing.T) {
	u := newUsageFake(t)
	for _, args := range [][]string{{"usage", "report", "--json"}, {"usage", "report", "-o", "json"}} {
		r := u.gw(&cmdutil.IOStreams{}, args...)
		if r.code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.errOut)
		}
		var got wire.UsageReport
		if err := json.Unmarshal([]byte(r.out), &got); err != nil {
			t.Fatalf("%v: not JSON: %v\n%s", args, err, r.out)
		}
		wantJSON, _ := json.Marshal(fakeReport())
		gotJSON, _ := json.Marshal(got)
		if !bytes.Equal(gotJSON, wantJSON) {
			t.Fatalf("%v: JSON changed on the way:\n%s\nwant\n%s", args, gotJSON, wantJSON)
		}
		if !strings.Contains(r.out, `"cost_usd": "1.250000000"`) {
			t.Fatalf("cost must stay an exact decimal string:\n%s", r.out)
		}
	}

	r := u.gw(&cmdutil.IOStreams{}, "usage", "report", "--start-date", "2026-04-01", "--end-date", "2026-04-30", "--by", "model", "--json")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var b wire.UsageBreakdown
	if err := json.Unmarshal([]byte(r.out), &b); err != nil || b.By != "model" || len(b.Rows) != 2 {
		t.Fatalf("breakdown JSON %v: %s", err, r.out)
	}
	q := u.query("/api/v1/organizations/acme/reports/usage/breakdown")
	if q.Get("by") != "model" || q.Get("period") != "custom" || q.Get("start_date") != "2026-04-01" || q.Get("end_date") != "2026-04-30" {
		t.Fatalf("breakdown query %v", q)
	}
}

func TestUsageReportRunBreakdownTable(t *testing.T) {
	u := newUsageFake(t)
	r := u.gw(&cmdutil.IOStreams{}, "usage", "report", "--by", "owner", "--provider", "openai")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	want := "openai/gpt-4o\t20\t2000\t200\t0\t0\t1.00\n-\t10\t1000\t100\t0\t0\t0.25\n"
	if r.out != want {
		t.Fatalf("breakdown rows:\n%q\nwant\n%q", r.out, want)
	}
	if q := u.query("/api/v1/organizations/acme/reports/usage/breakdown"); q.Get("by") != "owner" || q.Get("provider_id") != "openai" {
		t.Fatalf("query %v", q)
	}
	r = u.gw(&cmdutil.IOStreams{ForceTerminal: true}, "usage", "report", "--by", "owner")
	if !strings.Contains(r.out, "Usage by owner, May 1 – May 2, 2026 (UTC)") || !strings.Contains(r.out, "OWNER          REQUESTS") {
		t.Fatalf("terminal breakdown:\n%s", r.out)
	}
}

func TestUsageReportRunErrors(t *testing.T) {
	u := newUsageFake(t)
	r := u.gw(&cmdutil.IOStreams{}, "usage", "report", "--timezone", "Mars/Olympus")
	if r.code != ExitUsage || !strings.Contains(r.errOut, `--timezone "Mars/Olympus": unknown time zone`) {
		t.Fatalf("422: exit %d, stderr %q", r.code, r.errOut)
	}
	r = u.gw(&cmdutil.IOStreams{}, "usage", "report", "--workspace-filter", "nope")
	if r.code != ExitError || !strings.Contains(r.errOut, "--workspace-filter nope") || !strings.Contains(r.errOut, "404") {
		t.Fatalf("unknown workspace: exit %d, stderr %q", r.code, r.errOut)
	}
	t.Setenv("GW_TOKEN", "sk-cp-wrong")
	if r := u.gw(&cmdutil.IOStreams{}, "usage", "report"); r.code != ExitAuth {
		t.Fatalf("bad key: exit %d, want %d: %s", r.code, ExitAuth, r.errOut)
	}
	t.Setenv("GW_TOKEN", usageFakeToken)
	t.Setenv("GW_ORG", "")
	if r := u.gw(&cmdutil.IOStreams{}, "usage", "report"); r.code != ExitUsage || !strings.Contains(r.errOut, "no organization") {
		t.Fatalf("no org: exit %d: %s", r.code, r.errOut)
	}
}

func TestUsageDashboardNeedsTerminal(t *testing.T) {
	u := newUsageFake(t)
	for _, ios := range []*cmdutil.IOStreams{{}, {ForceTerminal: true}} {
		r := u.gw(ios, "usage", "--period", "7d")
		if r.code != ExitUsage || !strings.Contains(r.errOut, "needs a terminal; use gw usage report") || r.out != "" {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
		}
	}
	if q := u.query("/api/v1/organizations/acme/reports/usage"); q != nil {
		t.Fatalf("the dashboard asked the server before finding no terminal: %v", q)
	}
}

// TestUsageReportAgainstAPI runs gw usage report against the real
// management API on SQLite, with events ingested through the data-plane
// endpoint, on a fixed custom range so every day is known.
func TestUsageReportAgainstAPI(t *testing.T) {
	e := newResEnv(t)
	org, ws, owner := e.boot.Organization.ID, e.boot.Workspace.ID, e.boot.User.ID
	ev := func(at, model, provider string, in, out int64, cost string) map[string]any {
		return map[string]any{"id": uuid.NewString(), "org_id": org, "workspace_id": ws, "owner_id": owner,
			"model": model, "provider": provider, "input_tokens": in, "output_tokens": out,
			"cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": cost, "status": "ok", "latency_ms": 120, "occurred_at": at}
	}
	body, _ := json.Marshal(map[string]any{"events": []any{
		ev("2026-03-09T12:00:00Z", "openai/gpt-4o-mini", "openai", 1000, 100, "0.00021"), // the previous period
		ev("2026-03-10T09:00:00Z", "openai/gpt-4o-mini", "openai", 2000, 200, "0.00042"),
		ev("2026-03-10T23:30:00Z", "anthropic/claude-sonnet-4", "anthropic", 3000, 300, "0.0135"), // Mar 11 in Paris
		ev("2026-03-11T10:00:00Z", "openai/gpt-4o-mini", "openai", 1000, 100, "0.00021"),
	}})
	e.postAsOwner(t, "/api/v1/data-plane/usage-events", body)

	rng := []string{"usage", "report", "--start-date", "2026-03-10", "--end-date", "2026-03-11"}
	report := func(extra ...string) wire.UsageReport {
		t.Helper()
		return decodeJSONOut[wire.UsageReport](t, e.ok(append(append(append([]string{}, rng...), extra...), "--json")...))
	}

	// Days are cut in the requested zone: 23:30 UTC on Mar 10 is Mar 11 in Paris.
	paris := report("--timezone", "Europe/Paris")
	if len(paris.Daily) != 2 || paris.Daily[0].Requests != 1 || paris.Daily[1].Requests != 2 ||
		paris.Totals.Requests != 3 || paris.Comparison.Requests != 1 || paris.Period.Timezone != "Europe/Paris" {
		t.Fatalf("Paris report: %+v", paris)
	}
	utc := report()
	if len(utc.Daily) != 2 || utc.Daily[0].Requests != 2 || utc.Daily[1].Requests != 1 {
		t.Fatalf("UTC report: %+v", utc)
	}

	// The piped table carries the same numbers, row for row.
	out := e.ok(append(rng, "--timezone", "Europe/Paris")...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("table rows:\n%s", out)
	}
	row := func(label string, c wire.UsageCounters) string {
		return strings.Join([]string{label, fmt.Sprint(c.Requests), fmt.Sprint(c.InputTokens), fmt.Sprint(c.OutputTokens),
			fmt.Sprint(c.CacheReadTokens), fmt.Sprint(c.CacheWriteTokens), c.CostUSD}, "\t")
	}
	want := []string{
		row("2026-03-10", paris.Daily[0].UsageCounters), row("2026-03-11", paris.Daily[1].UsageCounters),
		row("total", paris.Totals), row("previous", paris.Comparison),
		"change\t+200.0%\t+500.0%\t+500.0%\t—\t—\t" + tui.ChangeCost(paris.Totals.CostUSD, paris.Comparison.CostUSD),
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Fatalf("row %d:\n%q\nwant\n%q", i, lines[i], want[i])
		}
	}
	if paris.Totals.CostUSD == "" || paris.Daily[1].CostUSD == paris.Daily[0].CostUSD {
		t.Fatalf("costs: %+v", paris)
	}

	// Filters reach the server: a model, the workspace by slug, another workspace.
	if r := report("--model", "openai/gpt-4o-mini"); r.Totals.Requests != 2 {
		t.Fatalf("model filter: %+v", r.Totals)
	}
	if r := report("--workspace-filter", e.boot.Workspace.Slug); r.Totals.Requests != 3 {
		t.Fatalf("workspace slug filter: %+v", r.Totals)
	}
	if r := report("--workspace-filter", uuid.NewString()); r.Totals.Requests != 0 {
		t.Fatalf("other workspace: %+v", r.Totals)
	}

	// Breakdown: largest cost first.
	b := decodeJSONOut[wire.UsageBreakdown](t, e.ok(append(rng, "--by", "model", "-o", "json")...))
	if b.By != "model" || len(b.Rows) != 2 || b.Rows[0].Key != "anthropic/claude-sonnet-4" || b.Rows[1].Requests != 2 {
		t.Fatalf("breakdown: %+v", b)
	}
	b = decodeJSONOut[wire.UsageBreakdown](t, e.ok(append(rng, "--by", "owner", "--json")...))
	if len(b.Rows) != 1 || b.Rows[0].Key != owner.String() {
		t.Fatalf("owner breakdown: %+v", b)
	}

	// On a terminal: the title names the range and zone.
	r := e.gwIO(&cmdutil.IOStreams{In: strings.NewReader(""), ForceTerminal: true}, append(rng, "--timezone", "Europe/Paris")...)
	if r.code != ExitOK || !strings.Contains(r.out, "Usage Mar 10 – Mar 11, 2026 (Europe/Paris), compared with Mar 8 – Mar 9, 2026") ||
		!strings.Contains(r.out, "DATE ") {
		t.Fatalf("terminal table: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	// A time zone the server does not know is its 422, reported as the
	// flag's mistake.
	r = e.code(ExitUsage, "", append(rng, "--timezone", "Mars/Olympus")...)
	if !strings.Contains(r.errOut, `--timezone "Mars/Olympus": unknown time zone; use an IANA name`) {
		t.Fatalf("bad zone: %s", r.errOut)
	}
}
