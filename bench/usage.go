package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// usageConfig is the usage scenario: events shipped to the ingest endpoint
// as data planes ship them, and report latency at checkpoints.
type usageConfig struct {
	Events     int   // total events to ingest
	Checkpoint []int // event counts at which reports are timed
	Conns      int   // concurrent senders
	Batch      int   // events per POST
	Reps       int   // calls per report and checkpoint
	Spread     time.Duration
	// Settle is how long to wait after each checkpoint's ingest before
	// timing the reports again, for the roller to move the queue into the
	// rollups (reports are exact either way; they read the queue).
	Settle time.Duration
}

func parseCheckpoints(s string, total int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad checkpoint %q", f)
		}
		out = append(out, min(n, total))
	}
	out = append(out, total)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// usageWorld is the organization the events belong to: its workspace and
// a pool of keys, owners and models.
type usageWorld struct {
	org, ws uuid.UUID
	keys    []uuid.UUID
	models  []string
	now     time.Time
	spread  time.Duration
	perDay  map[string]int64 // events sent per UTC day
}

func (w *usageWorld) batch(r *rand.Rand, n int) []wire.UsageEventIn {
	out := make([]wire.UsageEventIn, n)
	for i := range out {
		at := w.now.Add(-time.Duration(r.Int64N(int64(w.spread))))
		key := w.keys[r.IntN(len(w.keys))]
		model := w.models[r.IntN(len(w.models))]
		status := "ok"
		var reason *string
		switch r.IntN(20) {
		case 0:
			status, reason = "error", ptr("upstream_error")
		case 1:
			status, reason = "denied", ptr("budget_exceeded")
		}
		in, outTok := r.Int64N(4000), r.Int64N(800)
		out[i] = wire.UsageEventIn{ID: uuid.New(), OrgID: w.org, WorkspaceID: w.ws, InferenceKeyID: &key, OwnerID: &key,
			Model: model, Provider: strings.Split(model, "/")[0], InputTokens: in, OutputTokens: outTok,
			CostUSD: fmt.Sprintf("0.%09d", in*150+outTok*600), Status: status, LatencyMS: r.Int64N(3000), OccurredAt: at,
			Reason: reason, RequestedModel: model}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// runUsage ingests cfg.Events events through POST /api/v1/data-plane/usage-events
// and, at each checkpoint, times the reports a dashboard makes. The report's
// 30-day total must count exactly the events sent inside its window.
func runUsage(out io.Writer, g *gwSetup, cfg usageConfig) error {
	ctx := context.Background()
	w, err := newUsageWorld(ctx, g, cfg.Spread)
	if err != nil {
		return err
	}
	// The harness's own requests (warm-up and load) are counted before.
	before, err := g.owner.UsageReport(ctx, g.orgRef, client.UsageQuery{Period: "30d", Timezone: "UTC"})
	if err != nil {
		return err
	}
	u := &usageRun{ctx: ctx, out: out, g: g, w: w, cfg: cfg}
	u.printHeader()
	first, last, err := u.checkpoints()
	if err != nil {
		return err
	}
	if len(cfg.Checkpoint) > 1 {
		u.printGrowth(first, last)
	}
	return u.checkWindow(before.Totals.Requests)
}

// newUsageWorld is the owner's organization and first workspace with a
// pool of 20 keys and a mix of models, the events spread before now.
func newUsageWorld(ctx context.Context, g *gwSetup, spread time.Duration) (*usageWorld, error) {
	org, err := g.owner.GetOrganization(ctx, g.orgRef)
	if err != nil {
		return nil, fmt.Errorf("organization: %w", err)
	}
	wss, err := g.owner.ListWorkspaces(ctx, g.orgRef)
	if err != nil || len(wss) == 0 {
		return nil, fmt.Errorf("workspaces: %v", err)
	}
	w := &usageWorld{org: org.ID, ws: wss[0].ID, now: time.Now().UTC(), spread: spread,
		models: []string{"openai/gpt-4o", "openai/gpt-4o-mini", "openai/o3", "openai/gpt-4.1", "anthropic/claude-sonnet-4",
			"anthropic/claude-haiku-4", "anthropic/claude-opus-4", "openai/text-embedding-3-small"}}
	for range 20 {
		w.keys = append(w.keys, uuid.New())
	}
	w.perDay = map[string]int64{}
	return w, nil
}

// usageRun is one run of the usage scenario.
type usageRun struct {
	ctx context.Context
	out io.Writer
	g   *gwSetup
	w   *usageWorld
	cfg usageConfig
}

func (u *usageRun) printHeader() {
	fmt.Fprintf(u.out, "\n### usage: %d events through the ingest endpoint (batches of %d, %d senders), spread over %v\n\n",
		u.cfg.Events, u.cfg.Batch, u.cfg.Conns, u.cfg.Spread)
	fmt.Fprintln(u.out, "| stored events | ingest events/s | when | report 30d UTC (median / max) | 30d Asia/Kolkata | 7d UTC | breakdown by model, 30d |")
	fmt.Fprintln(u.out, "|---:|---:|---|---:|---:|---:|---:|")
}

// checkpoints ingests up to each checkpoint in turn and times the reports
// there; the medians of the first and the last show how reports scale.
func (u *usageRun) checkpoints() (first, last []time.Duration, err error) {
	sent := 0
	for _, cp := range u.cfg.Checkpoint {
		medians, err := u.checkpoint(cp, cp-sent)
		if err != nil {
			return nil, nil, err
		}
		sent = cp
		if first == nil {
			first = medians
		}
		last = medians
	}
	return first, last, nil
}

// checkpoint ingests n events to reach cp and times the reports at once
// and, with -settle, again once the roller has had time to run.
func (u *usageRun) checkpoint(cp, n int) ([]time.Duration, error) {
	start := time.Now()
	n, err := ingest(u.ctx, u.g, u.w, u.cfg, n)
	if err != nil {
		return nil, err
	}
	rate := float64(n) / time.Since(start).Seconds()
	medians, err := u.timeReports(cp, rate, "at once")
	if err != nil {
		return nil, err
	}
	if u.cfg.Settle > 0 {
		time.Sleep(u.cfg.Settle)
		if medians, err = u.timeReports(cp, rate, fmt.Sprintf("after %v", u.cfg.Settle)); err != nil {
			return nil, err
		}
	}
	return medians, nil
}

// reportCall is one report a dashboard makes.
type reportCall struct {
	name string
	fn   func() error
}

func (u *usageRun) reportCalls() []reportCall {
	ctx, g := u.ctx, u.g
	return []reportCall{
		{"30d UTC", func() error {
			_, err := g.owner.UsageReport(ctx, g.orgRef, client.UsageQuery{Period: "30d", Timezone: "UTC"})
			return err
		}},
		{"30d Kolkata", func() error {
			_, err := g.owner.UsageReport(ctx, g.orgRef, client.UsageQuery{Period: "30d", Timezone: "Asia/Kolkata"})
			return err
		}},
		{"7d UTC", func() error {
			_, err := g.owner.UsageReport(ctx, g.orgRef, client.UsageQuery{Period: "7d", Timezone: "UTC"})
			return err
		}},
		{"breakdown", func() error {
			_, err := g.owner.UsageBreakdown(ctx, g.orgRef, "model", client.UsageQuery{Period: "30d", Timezone: "UTC"})
			return err
		}},
	}
}

// timeReports times each report cfg.Reps times and prints a row of their
// medians and maxima; it returns the medians.
func (u *usageRun) timeReports(cp int, rate float64, when string) ([]time.Duration, error) {
	row := []string{strconv.Itoa(cp), fmt.Sprintf("%.0f", rate), when}
	var medians []time.Duration
	for _, c := range u.reportCalls() {
		ds, err := u.timeCall(c)
		if err != nil {
			return nil, err
		}
		medians = append(medians, ds[len(ds)/2])
		row = append(row, ms(ds[len(ds)/2])+" / "+ms(ds[len(ds)-1]))
	}
	fmt.Fprintln(u.out, "| "+strings.Join(row, " | ")+" |")
	fmt.Fprintf(os.Stderr, "usage checkpoint %d events: %s\n", cp, strings.Join(row[1:], ", "))
	return medians, nil
}

// timeCall is the durations of cfg.Reps calls of c, sorted.
func (u *usageRun) timeCall(c reportCall) ([]time.Duration, error) {
	var ds []time.Duration
	for range u.cfg.Reps {
		s := time.Now()
		if err := c.fn(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		ds = append(ds, time.Since(s))
	}
	slices.Sort(ds)
	return ds, nil
}

// printGrowth prints the last checkpoint's medians over the first's: a
// report that reads rollups stays flat as events grow.
func (u *usageRun) printGrowth(first, last []time.Duration) {
	var ratios []string
	for i := range last {
		ratios = append(ratios, fmt.Sprintf("%.2f×", float64(last[i])/float64(first[i])))
	}
	cps := u.cfg.Checkpoint
	fmt.Fprintf(u.out, "\nmedian at %d events over the median at %d (flat is 1×): %s\n", cps[len(cps)-1], cps[0], strings.Join(ratios, ", "))
}

// checkWindow holds the 30-day report to the events sent inside its
// window, over the before requests it counted already.
func (u *usageRun) checkWindow(before int64) error {
	r, err := u.g.owner.UsageReport(u.ctx, u.g.orgRef, client.UsageQuery{Period: "30d", Timezone: "UTC"})
	if err != nil {
		return err
	}
	var inWindow int64
	for day, n := range u.w.perDay {
		if day >= r.Period.StartAt.UTC().Format(time.DateOnly) {
			inWindow += n
		}
	}
	if got := r.Totals.Requests - before; got != inWindow {
		return fmt.Errorf("the 30-day report counts %d new requests; %d events were sent inside its window", got, inWindow)
	}
	fmt.Fprintf(u.out, "usage: the 30-day report counts all %d events sent inside its window\n", inWindow)
	return nil
}

// ingest sends n events and counts them per day.
func ingest(ctx context.Context, g *gwSetup, w *usageWorld, cfg usageConfig, n int) (int, error) {
	var mu sync.Mutex
	var firstErr error
	next := 0
	var wg sync.WaitGroup
	for c := range cfg.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(c)))
			for {
				mu.Lock()
				if next >= n || firstErr != nil {
					mu.Unlock()
					return
				}
				size := min(cfg.Batch, n-next)
				next += size
				mu.Unlock()
				events := w.batch(r, size)
				res, err := g.owner.IngestUsage(ctx, events)
				mu.Lock()
				switch {
				case err != nil:
					firstErr = fmt.Errorf("ingest: %w", err)
				case res.Accepted != size:
					firstErr = fmt.Errorf("ingest accepted %d of %d", res.Accepted, size)
				}
				for _, e := range events {
					w.perDay[e.OccurredAt.UTC().Format(time.DateOnly)]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return n, firstErr
}
