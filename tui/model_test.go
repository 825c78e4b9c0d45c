package tui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// fakeSource answers from canned data and records every call, so tests can
// check which query a key press sent.
type fakeSource struct {
	mu     sync.Mutex
	calls  []call
	fail   error // when set, every call fails with it
	report func(q client.UsageQuery) wire.UsageReport
	rows   map[string][]wire.UsageBreakdownRow
	labels map[string]string
	// notes are the breakdowns' notes, by dimension.
	notes map[string]string
}

type call struct {
	kind string // report or breakdown:<by>
	q    client.UsageQuery
}

func (f *fakeSource) record(kind string, q client.UsageQuery) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{kind, q})
	return f.fail
}

func (f *fakeSource) Report(_ context.Context, q client.UsageQuery) (wire.UsageReport, error) {
	if err := f.record("report", q); err != nil {
		return wire.UsageReport{}, err
	}
	return f.report(q), nil
}

func (f *fakeSource) Breakdown(_ context.Context, by string, q client.UsageQuery) (wire.UsageBreakdown, error) {
	if err := f.record("breakdown:"+by, q); err != nil {
		return wire.UsageBreakdown{}, err
	}
	return wire.UsageBreakdown{By: by, Rows: f.rows[by], Note: f.notes[by]}, nil
}

// lastCall is the newest call of a kind.
func (f *fakeSource) lastCall(t *testing.T, kind string) client.UsageQuery {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].kind == kind {
			return f.calls[i].q
		}
	}
	t.Fatalf("no %s call in %v", kind, f.calls)
	return client.UsageQuery{}
}

func (f *fakeSource) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// labeledSource is a fakeSource that also names ids.
type labeledSource struct{ *fakeSource }

func (l labeledSource) Labels(context.Context) (map[string]string, error) {
	return l.labels, errors.New("members: 403 (ignored: names are a convenience)")
}

var (
	day0   = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	wsProd = "3f1c2a9e-0000-4000-8000-000000000001"
	wsDev  = "3f1c2a9e-0000-4000-8000-000000000002"
)

func counters(req int64, cost string) wire.UsageCounters {
	return wire.UsageCounters{Requests: req, InputTokens: req * 100, OutputTokens: req * 10, CacheReadTokens: req * 5, CostUSD: cost}
}

// canned is a report whose numbers depend on the period, so a test can
// tell from the screen which period it shows.
func canned(q client.UsageQuery) wire.UsageReport {
	days := map[string]int{"today": 1, "7d": 7, "30d": 30, "month_to_date": 4}[q.Period]
	if days == 0 {
		days = 30
	}
	r := wire.UsageReport{
		Totals:     counters(int64(1000*days), "125.50"),
		Comparison: counters(int64(800*days), "100.40"),
		Period: wire.UsagePeriod{
			StartAt: day0, EndAt: day0.AddDate(0, 0, days),
			PreviousStartAt: day0.AddDate(0, 0, -days), PreviousEndAt: day0,
			Timezone: "UTC",
		},
		UpdatedAt: day0.Add(time.Hour),
	}
	for i := range days {
		r.Daily = append(r.Daily, wire.UsageDay{Date: day0.AddDate(0, 0, i), UsageCounters: counters(int64(100+i*10), "4.25")})
	}
	if q.WorkspaceID == wsDev {
		r.Totals = counters(7, "0.0042")
	}
	return r
}

func newFake() *fakeSource {
	return &fakeSource{
		report: canned,
		rows: map[string][]wire.UsageBreakdownRow{
			"model": {
				{Key: "openai/gpt-4o", UsageCounters: counters(600, "100.00")},
				{Key: "anthropic/claude-sonnet-4", UsageCounters: counters(400, "25.50")},
			},
			"provider": {
				{Key: "openai", UsageCounters: counters(600, "100.00")},
				{Key: "anthropic", UsageCounters: counters(400, "25.50")},
			},
			"workspace": {
				{Key: wsProd, UsageCounters: counters(990, "125.00")},
				{Key: wsDev, UsageCounters: counters(10, "0.50")},
			},
			"inference_key": {
				{Key: "9d0c0000-0000-4000-8000-00000000000a", UsageCounters: counters(1000, "125.50")},
			},
		},
		labels: map[string]string{wsProd: "Production", wsDev: "Development"},
	}
}

// dashboard is a test harness around the root model: it plays the part of
// the bubbletea runtime by running the commands Update returns and feeding
// their messages back, until nothing is left to do.
type dashboard struct {
	t   *testing.T
	m   *Model
	src *fakeSource
}

func start(t *testing.T, src Source, fake *fakeSource, opts Options) *dashboard {
	t.Helper()
	opts.Source = src
	opts.Clock = time.UTC // the screen must not depend on the machine's zone
	if opts.Org == "" {
		opts.Org = "acme"
	}
	d := &dashboard{t: t, m: New(opts), src: fake}
	d.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	d.run(d.m.Init())
	return d
}

func startFake(t *testing.T, opts Options) *dashboard {
	fake := newFake()
	return start(t, fake, fake, opts)
}

// send delivers one message and everything that follows from it.
func (d *dashboard) send(msg tea.Msg) {
	d.t.Helper()
	_, cmd := d.m.Update(msg)
	d.run(cmd)
}

func (d *dashboard) key(k string) {
	d.t.Helper()
	d.send(keyMsg(k))
}

func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// run executes a command and delivers its messages. Tests that run it keep
// auto refresh off, so no command here waits on a timer.
func (d *dashboard) run(cmd tea.Cmd) {
	d.t.Helper()
	for _, msg := range collect(cmd) {
		d.send(msg)
	}
}

// collect runs a command, flattening batches, and returns its messages.
func collect(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if batch, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range batch {
			out = append(out, collect(c)...)
		}
		return out
	}
	if msg == nil {
		return nil
	}
	return []tea.Msg{msg}
}

func (d *dashboard) view() string { return ansi.Strip(d.m.View()) }

func (d *dashboard) mustShow(parts ...string) {
	d.t.Helper()
	v := d.view()
	for _, p := range parts {
		if !strings.Contains(v, p) {
			d.t.Fatalf("screen lacks %q:\n%s", p, v)
		}
	}
}

func (d *dashboard) mustNotShow(parts ...string) {
	d.t.Helper()
	v := d.view()
	for _, p := range parts {
		if strings.Contains(v, p) {
			d.t.Fatalf("screen shows %q:\n%s", p, v)
		}
	}
}

func TestFirstLoadShowsTotalsAndChange(t *testing.T) {
	d := startFake(t, Options{Timezone: "Europe/Paris"})
	q := d.src.lastCall(t, "report")
	if q.Period != "30d" || q.Timezone != "Europe/Paris" || q.WorkspaceID != "" {
		t.Fatalf("first query %+v", q)
	}
	if d.src.lastCall(t, "breakdown:model").Period != "30d" {
		t.Fatal("breakdown not loaded for the same period")
	}
	if d.m.state != stateReady {
		t.Fatalf("state %v", d.m.state)
	}
	d.mustShow(
		"gw usage", "acme", "Last 30 days", "May 1 – May 30, 2026 (UTC)", "compared with Apr 1 – Apr 30, 2026",
		"Requests", "30,000", "▲ +25.0%", "prev 24,000",
		"Input tokens", "3,000,000",
		"Cost", "$125.50", "+25.0%", "prev $100.40",
		"Cost per day", "total $125.50",
		"By model", "openai/gpt-4o", "anthropic/claude-sonnet-4", "79.7%", "20.3%",
		"filters: none", "updated",
	)
}

func TestLoadingThenFailedFirstLoad(t *testing.T) {
	fake := newFake()
	fake.fail = errors.New("gw: 503 control plane unavailable")
	m := New(Options{Source: fake, Org: "acme"})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	cmd := m.Init()
	if v := ansi.Strip(m.View()); !strings.Contains(v, "Loading the usage report") || !strings.Contains(v, "loading…") {
		t.Fatalf("loading screen:\n%s", v)
	}
	d := &dashboard{t: t, m: m, src: fake}
	d.run(cmd)
	if m.state != stateFailed {
		t.Fatalf("state %v", m.state)
	}
	d.mustShow("Could not load usage: gw: 503 control plane unavailable", "r retries")

	fake.fail = nil
	d.key("r")
	if m.state != stateReady {
		t.Fatalf("retry: state %v", m.state)
	}
	d.mustShow("30,000")
	d.mustNotShow("503")
}

func TestPeriodSwitchLoadsTheNewPeriod(t *testing.T) {
	d := startFake(t, Options{})
	cases := []struct {
		key, period, title, requests string
	}{
		{"2", "7d", "Last 7 days", "7,000"},
		{"1", "today", "Today", "1,000"},
		{"4", "month_to_date", "Month to date", "4,000"},
		{"p", "today", "Today", "1,000"}, // p cycles: month_to_date → today
		{"p", "7d", "Last 7 days", "7,000"},
		{"3", "30d", "Last 30 days", "30,000"},
	}
	for _, c := range cases {
		d.key(c.key)
		for _, kind := range []string{"report", "breakdown:model", "breakdown:workspace"} {
			if got := d.src.lastCall(t, kind).Period; got != c.period {
				t.Fatalf("key %s: %s asked for period %q, want %q", c.key, kind, got, c.period)
			}
		}
		d.mustShow(c.title, c.requests)
	}
	// The same period again loads nothing.
	n := d.src.callCount()
	d.key("3")
	if d.src.callCount() != n {
		t.Fatal("pressing the current period reloaded")
	}
}

func TestPeriodKeyIssuesCommandWithQuery(t *testing.T) {
	// Without the harness: the key press itself returns the loads, and the
	// source is only called when the command runs.
	fake := newFake()
	m := New(Options{Source: fake, Timezone: "Asia/Tokyo", WorkspaceID: wsProd})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	for _, msg := range collect(m.Init()) {
		m.Update(msg)
	}
	before := fake.callCount()
	_, cmd := m.Update(keyMsg("2"))
	if cmd == nil || fake.callCount() != before {
		t.Fatalf("cmd %v, calls %d → %d: Update must not do I/O", cmd, before, fake.callCount())
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "loading…") {
		t.Fatalf("no loading mark while the new period loads:\n%s", v)
	}
	msgs := collect(cmd)
	var sawReport bool
	for _, msg := range msgs {
		if r, ok := msg.(reportLoadedMsg); ok {
			sawReport = r.seq == m.reportSeq
		}
	}
	if !sawReport {
		t.Fatalf("messages %T…", msgs)
	}
	q := fake.lastCall(t, "report")
	want := client.UsageQuery{Period: "7d", Timezone: "Asia/Tokyo", WorkspaceID: wsProd}
	if !reflect.DeepEqual(q, want) {
		t.Fatalf("query %+v, want %+v", q, want)
	}
	if ws := fake.lastCall(t, "breakdown:workspace"); ws.WorkspaceID != "" || ws.Period != "7d" {
		t.Fatalf("the workspace list must ignore the workspace filter: %+v", ws)
	}
}

func TestStaleAnswerIsDropped(t *testing.T) {
	fake := newFake()
	m := New(Options{Source: fake})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	for _, msg := range collect(m.Init()) {
		m.Update(msg)
	}
	_, slow := m.Update(keyMsg("1")) // today, answered late
	_, fast := m.Update(keyMsg("2")) // 7d, answered first
	for _, msg := range collect(fast) {
		m.Update(msg)
	}
	for _, msg := range collect(slow) {
		m.Update(msg)
	}
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "Last 7 days") || !strings.Contains(v, "7,000") || strings.Contains(v, "│ 1,000") {
		t.Fatalf("a stale answer replaced the newer one:\n%s", v)
	}
}

func TestBreakdownSwitch(t *testing.T) {
	d := startFake(t, Options{})
	d.key("tab")
	d.mustShow("By requested model")
	d.mustNotShow("enter filter") // the dashboard has no requested-model filter
	d.key("tab")
	if q := d.src.lastCall(t, "breakdown:provider"); q.Period != "30d" {
		t.Fatalf("provider breakdown query %+v", q)
	}
	d.mustShow("By provider", "openai", "anthropic", "2 rows")
	d.mustNotShow("openai/gpt-4o")

	d.key("shift+tab")
	d.key("shift+tab")
	d.mustShow("By model", "openai/gpt-4o")

	// Back past the first dimension to the last: the MCP tools, then
	// workspace, with names.
	d.key("shift+tab")
	d.mustShow("By MCP tool")
	d.key("shift+tab")
	d.mustShow("By workspace", wsProd)
	d.key("shift+tab")
	d.mustShow("By inference key", "9d0c0000-0000-4000-8000-00000000000a")
	d.mustNotShow("enter filter") // nothing to filter inference keys on
}

func TestBreakdownShowsLoadingWhileSwitching(t *testing.T) {
	d := startFake(t, Options{})
	_, cmd := d.m.Update(keyMsg("tab"))
	// The table asks for the switch by message; deliver it, not the load.
	msgs := collect(cmd)
	if len(msgs) != 1 {
		t.Fatalf("tab: %v", msgs)
	}
	_, load := d.m.Update(msgs[0])
	d.mustShow("By requested model", "loading…")
	d.mustNotShow("openai/gpt-4o")
	d.run(load)
	d.mustShow("By requested model")
}

func TestErrorKeepsLastGoodData(t *testing.T) {
	d := startFake(t, Options{})
	d.src.fail = errors.New("gw: 502 bad gateway")
	d.key("r")
	if d.m.state != stateReady {
		t.Fatalf("state %v", d.m.state)
	}
	d.mustShow("⚠ loading the", "gw: 502 bad gateway", "(showing the data of 01:00:00)",
		"30,000", "$125.50", "openai/gpt-4o", "Cost per day")
	d.mustNotShow("loading…")

	// The next good answer clears the error.
	d.src.fail = nil
	d.key("r")
	d.mustNotShow("502")
	d.mustShow("30,000")
}

func TestBreakdownErrorKeepsRows(t *testing.T) {
	d := startFake(t, Options{})
	_, cmd := d.m.Update(keyMsg("r"))
	for _, msg := range collect(cmd) {
		if b, ok := msg.(breakdownLoadedMsg); ok {
			msg = errMsg{kind: loadBreakdown, seq: b.seq, err: errors.New("gw: 500 boom")}
		}
		d.send(msg)
	}
	d.mustShow("loading the breakdown failed (showing the data of 01:00:00): gw: 500 boom", "openai/gpt-4o", "30,000")
}

func TestTransportErrorShowsItsCause(t *testing.T) {
	d := startFake(t, Options{})
	d.src.fail = fmt.Errorf("GET /api/v1/organizations/acme/reports/usage: %w", &url.Error{Op: "Get",
		URL: "http://127.0.0.1:1/api/v1/organizations/acme/reports/usage?period=30d&timezone=Europe%2FParis",
		Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")})
	d.key("r")
	d.mustShow("report failed (showing the data of 01:00:00): dial tcp 127.0.0.1:1: connect: connection refused", "30,000")
}

func TestStaleErrorIsIgnored(t *testing.T) {
	d := startFake(t, Options{})
	d.send(errMsg{kind: loadReport, seq: d.m.reportSeq - 10, err: errors.New("old failure")})
	d.mustNotShow("old failure")
}

func TestResize(t *testing.T) {
	d := startFake(t, Options{})
	for _, size := range []struct{ w, h int }{{120, 40}, {80, 24}, {160, 50}, {60, 20}} {
		d.send(tea.WindowSizeMsg{Width: size.w, Height: size.h})
		v := d.view()
		lines := strings.Split(v, "\n")
		if len(lines) != size.h {
			t.Errorf("%dx%d: %d lines\n%s", size.w, size.h, len(lines), v)
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > size.w {
				t.Errorf("%dx%d: line %d is %d wide: %q", size.w, size.h, i, w, l)
			}
		}
		if !strings.Contains(v, "Requests") || !strings.Contains(v, "q quit") {
			t.Errorf("%dx%d: totals or help missing:\n%s", size.w, size.h, v)
		}
	}
	// Components got the new size.
	if d.m.totals.width != 60 || d.m.breakdown.width != 60 || d.m.chart.width != 60 {
		t.Fatalf("sizes: totals %d, breakdown %d, chart %d", d.m.totals.width, d.m.breakdown.width, d.m.chart.width)
	}
	// Small: the totals become a four-line table; large: six boxes.
	if d.m.totals.Height() != compactHeight {
		t.Fatalf("small totals height %d", d.m.totals.Height())
	}
	d.mustShow("period", "previous", "change", "+25.0%")
	d.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	if d.m.totals.Height() != boxHeight {
		t.Fatalf("large totals height %d", d.m.totals.Height())
	}
	d.mustShow("prev 24,000")
}

func TestChartMetricToggle(t *testing.T) {
	d := startFake(t, Options{Period: "7d"})
	d.mustShow("Cost per day", "total $125.50", "peak $4.25")
	d.key("m")
	d.mustShow("Requests per day", "total 7,000", "peak 160 on May 7")
	d.key("m")
	d.mustShow("Tokens per day (input + output)")
	d.key("m")
	d.mustShow("Cost per day")
	if n := strings.Count(d.view(), "█"); n == 0 {
		t.Fatalf("no bars drawn:\n%s", d.view())
	}
}

func TestWorkspaceCycleAndClear(t *testing.T) {
	fake := newFake()
	d := start(t, labeledSource{fake}, fake, Options{})
	d.key("w")
	if q := fake.lastCall(t, "report"); q.WorkspaceID != wsProd {
		t.Fatalf("first w: %+v", q)
	}
	d.mustShow("filters: workspace Production")
	d.key("w")
	if q := fake.lastCall(t, "report"); q.WorkspaceID != wsDev {
		t.Fatalf("second w: %+v", q)
	}
	d.mustShow("filters: workspace Development", "$0.0042", "7")
	d.key("w")
	if q := fake.lastCall(t, "report"); q.WorkspaceID != "" {
		t.Fatalf("third w should clear: %+v", q)
	}
	d.mustShow("filters: none")

	// Names replace ids in the breakdown too (shift+tab twice: the MCP
	// tools are the last dimension, workspaces before them).
	d.key("shift+tab")
	d.key("shift+tab")
	d.mustShow("By workspace", "Production", "Development")
	d.mustNotShow(wsProd)
}

func TestFilterByRowAndClear(t *testing.T) {
	d := startFake(t, Options{})
	d.key("down") // anthropic/claude-sonnet-4
	d.key("enter")
	q := d.src.lastCall(t, "report")
	if q.ModelID != "anthropic/claude-sonnet-4" || q.Period != "30d" {
		t.Fatalf("filter by model: %+v", q)
	}
	if bq := d.src.lastCall(t, "breakdown:model"); bq.ModelID != "anthropic/claude-sonnet-4" {
		t.Fatalf("the breakdown must follow the filter: %+v", bq)
	}
	d.mustShow("filters: model anthropic/claude-sonnet-4")

	d.key("tab")
	d.key("tab")
	d.key("enter") // openai, the first provider
	if q := d.src.lastCall(t, "report"); q.ProviderID != "openai" || q.ModelID != "anthropic/claude-sonnet-4" {
		t.Fatalf("filters add up: %+v", q)
	}
	d.mustShow("model anthropic/claude-sonnet-4 · provider openai")

	d.key("c")
	if q := d.src.lastCall(t, "report"); !reflect.DeepEqual(q, client.UsageQuery{Period: "30d"}) {
		t.Fatalf("c must clear every filter: %+v", q)
	}
	d.mustShow("filters: none")
}

func TestWorkspaceCycleWithoutUsage(t *testing.T) {
	fake := newFake()
	delete(fake.rows, "workspace")
	d := start(t, fake, fake, Options{})
	n := fake.callCount()
	d.key("w")
	if fake.callCount() != n {
		t.Fatal("w loaded without a workspace to go to")
	}
	d.mustShow("no workspace has usage in this period")
}

func TestRefreshTicks(t *testing.T) {
	fake := newFake()
	m := New(Options{Source: fake, Refresh: time.Millisecond})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	var ticks []tickMsg
	for _, msg := range collect(m.Init()) {
		if tick, ok := msg.(tickMsg); ok {
			ticks = append(ticks, tick)
			continue
		}
		m.Update(msg)
	}
	if len(ticks) != 1 || ticks[0].gen != m.tickGen {
		t.Fatalf("Init scheduled %v (gen %d)", ticks, m.tickGen)
	}
	if v := ansi.Strip(m.View()); !strings.Contains(v, "every 1ms") {
		t.Fatalf("refresh interval not shown:\n%s", v)
	}

	before := fake.callCount()
	_, cmd := m.Update(ticks[0])
	var next []tickMsg
	for _, msg := range collect(cmd) {
		if tick, ok := msg.(tickMsg); ok {
			next = append(next, tick)
			continue
		}
		m.Update(msg)
	}
	if fake.callCount() != before+3 {
		t.Fatalf("a tick made %d calls, want 3 (report, breakdown, workspaces)", fake.callCount()-before)
	}
	if len(next) != 1 || next[0].gen != ticks[0].gen {
		t.Fatalf("tick did not reschedule its timer: %v", next)
	}

	// r restarts the timer: the old timer's tick is then ignored.
	_, cmd = m.Update(keyMsg("r"))
	for _, msg := range collect(cmd) {
		if _, ok := msg.(tickMsg); !ok {
			m.Update(msg)
		}
	}
	before = fake.callCount()
	if _, cmd := m.Update(next[0]); cmd != nil || fake.callCount() != before {
		t.Fatal("a superseded timer still refreshed")
	}

	// A tick while a load is in flight does not pile up another one.
	m.Update(keyMsg("2")) // loads issued, not run
	_, cmd = m.Update(tickMsg{gen: m.tickGen})
	for _, msg := range collect(cmd) {
		if _, ok := msg.(tickMsg); !ok {
			t.Fatalf("tick during a load issued %T", msg)
		}
	}
}

func TestNoRefreshWhenOff(t *testing.T) {
	d := startFake(t, Options{})
	if cmd := d.m.schedule(); cmd != nil {
		t.Fatal("refresh 0 still schedules ticks")
	}
	d.mustNotShow("every ")
}

func TestHelp(t *testing.T) {
	d := startFake(t, Options{})
	d.mustShow("1-4 period", "tab breakdown", "enter filter", "m metric", "w workspace", "c clear filters", "r refresh", "? more", "q quit")
	d.key("?")
	d.mustShow("shift+tab", "previous breakdown", "g/home", "next period", "? less")
	if lines := strings.Split(d.view(), "\n"); len(lines) != 40 {
		t.Fatalf("full help overflows: %d lines", len(lines))
	}
	d.key("?")
	d.mustNotShow("g/home")
}

func TestQuit(t *testing.T) {
	d := startFake(t, Options{})
	_, cmd := d.m.Update(keyMsg("q"))
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q does not quit")
	}
}

// TestRunQuits runs the dashboard in a real bubbletea program, with keys
// from a reader: it starts, loads, and q ends it.
func TestRunQuits(t *testing.T) {
	fake := newFake()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	if err := Run(ctx, Options{Source: fake, Org: "acme"}, strings.NewReader("q"), &out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("q did not end the program")
	}
}

// Without colours (NO_COLOR, a dumb terminal) the reverse video of the
// selected row is lost: a marker says which row enter filters by (issue
// 22, row 7). The screen is read with the escape codes stripped, as such
// a terminal shows it.
func TestSelectedRowIsMarkedWithoutColour(t *testing.T) {
	d := startFake(t, Options{})
	d.mustShow(selectionMarker + "openai/gpt-4o")
	d.mustNotShow(selectionMarker + "anthropic/claude-sonnet-4")
	d.key("down")
	d.mustShow(selectionMarker + "anthropic/claude-sonnet-4")
	d.mustNotShow(selectionMarker + "openai/gpt-4o")
	d.key("enter")
	if q := d.src.lastCall(t, "report"); q.ModelID != "anthropic/claude-sonnet-4" {
		t.Fatalf("enter filtered by %q, not the marked row", q.ModelID)
	}
}

// A workspace's own dashboard names the workspace and has no workspace
// filter to cycle (issue 22, row 3).
func TestWorkspaceDashboard(t *testing.T) {
	d := startFake(t, Options{Workspace: "Search"})
	d.mustShow("acme · workspace Search")
	calls := d.src.callCount()
	d.key("w")
	if d.src.callCount() != calls || d.m.filters.WorkspaceID != "" {
		t.Fatalf("w cycled a workspace filter on a workspace's dashboard")
	}
	d.mustNotShow("w workspace")
}

// The full key help fits 80 columns: every key, quit included, on screen
// and no line wider than the terminal (issue 22, row 15).
func TestFullHelpFitsEightyColumns(t *testing.T) {
	d := startFake(t, Options{})
	d.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	d.key("?")
	d.mustShow("q quit", "r refresh", "m metric", "enter     filter", "G/end  go to end")
	for _, line := range strings.Split(d.view(), "\n") {
		if w := ansi.StringWidth(line); w > 80 {
			t.Fatalf("a line of %d columns:\n%s", w, d.view())
		}
	}
}
