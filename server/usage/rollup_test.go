package usage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/tags"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// world is the random history a property run stores, and what each event
// is as the brute force sees it.
type world struct {
	org                      uuid.UUID
	workspaces, keys, owners []uuid.UUID
	mkeys, creds             []uuid.UUID
	models                   []string
	events                   []store.UsageEvent // unique ids, as stored
	// tagValues are the values each tag key takes (issue 21).
	tagValues map[string][]string
}

// tagKeys are the world's tag keys, in a fixed order.
var tagKeys = []string{"team", "feature", "env"}

// randomTags is a random subset of the tag keys with random values: some
// events have none, a few every key.
func (w *world) randomTags(r *rand.Rand) map[string]string {
	var out map[string]string
	for _, k := range tagKeys {
		if r.IntN(3) > 0 {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = pick(r, w.tagValues[k])
		}
	}
	return out
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func maybe(r *rand.Rand, ids []uuid.UUID) *uuid.UUID {
	if r.IntN(4) == 0 {
		return nil
	}
	id := pick(r, ids)
	return &id
}

func newWorld(r *rand.Rand) *world {
	ids := func(n int) []uuid.UUID {
		out := make([]uuid.UUID, n)
		for i := range out {
			out[i] = uuid.New()
		}
		return out
	}
	return &world{org: uuid.New(), workspaces: ids(2), keys: ids(4), owners: ids(3), mkeys: ids(2), creds: ids(2),
		models:    []string{"openai/gpt-4o", "openai/gpt-4o-mini", "anthropic/claude-sonnet"},
		tagValues: map[string][]string{"team": {"search", "ads", "infra"}, "feature": {"chat", "summaries"}, "env": {"prod", "staging"}}}
}

// event is a random event around base: within the 70 days before it and
// the day after, at any microsecond.
func (w *world) event(r *rand.Rand, base time.Time) store.UsageEvent {
	at := base.Add(-70 * 24 * time.Hour).Add(time.Duration(r.Int64N(int64(71 * 24 * time.Hour)))).Truncate(time.Microsecond)
	model := pick(r, w.models)
	var set *uuid.UUID
	t := w.randomTags(r)
	if t != nil {
		id := tags.SetID(w.org, t)
		set = &id
	}
	// One event in four a response-cache hit: its saving is summed as
	// its cost is (issue 35).
	var saving int64
	if r.IntN(4) == 0 {
		saving = r.Int64N(20_000_000)
	}
	return store.UsageEvent{Tags: t, TagSetID: set, ID: uuid.New(), OrgID: w.org, WorkspaceID: pick(r, w.workspaces), CacheSavingNanoUSD: saving,
		InferenceKeyID: maybe(r, w.keys), ManagementKeyID: maybe(r, w.mkeys), OwnerID: maybe(r, w.owners),
		Model: model, Provider: strings.Split(model, "/")[0], ProviderCredentialID: maybe(r, w.creds),
		InputTokens: r.Int64N(5000), OutputTokens: r.Int64N(2000), CacheReadTokens: r.Int64N(100), CacheWriteTokens: r.Int64N(50),
		CostNanoUSD: r.Int64N(50_000_000), Status: pick(r, wire.UsageStatuses), LatencyMS: r.Int64N(900),
		OccurredAt: at, Bucket: store.UsageBucket(at), ReceivedAt: base, RequestedModel: pick(r, w.models)}
}

func (w *world) filter(r *rand.Rand) store.UsageFilter {
	f := store.UsageFilter{OrgID: w.org}
	switch r.IntN(10) {
	case 0:
		f.WorkspaceID = maybe(r, w.workspaces)
	case 1:
		f.InferenceKeyID = maybe(r, w.keys)
	case 2:
		f.OwnerID = maybe(r, w.owners)
	case 3:
		f.ManagementKeyID = maybe(r, w.mkeys)
	case 4:
		f.ProviderCredentialID = maybe(r, w.creds)
	case 5:
		f.Model = pick(r, w.models)
	case 6:
		f.RequestedModel = pick(r, w.models)
	case 7:
		f.Status = pick(r, wire.UsageStatuses)
		f.Provider = pick(r, []string{"openai", "anthropic"})
	}
	// Tag filters, alone or with another: all must match.
	for _, k := range tagKeys {
		if r.IntN(4) == 0 {
			f.Tags = append(f.Tags, store.TagPair{Key: k, Value: pick(r, w.tagValues[k])})
		}
	}
	return f
}

func hasTags(e store.UsageEvent, pairs []store.TagPair) bool {
	for _, p := range pairs {
		if v, ok := e.Tags[p.Key]; !ok || v != p.Value {
			return false
		}
	}
	return true
}

func sameID(a, b *uuid.UUID) bool { return b == nil || (a != nil && *a == *b) }

// selects is the filter as the brute force applies it.
func selects(f store.UsageFilter, e store.UsageEvent, from, to time.Time) bool {
	return e.OrgID == f.OrgID && !e.OccurredAt.Before(from) && e.OccurredAt.Before(to) &&
		(f.WorkspaceID == nil || e.WorkspaceID == *f.WorkspaceID) && sameID(e.InferenceKeyID, f.InferenceKeyID) &&
		sameID(e.OwnerID, f.OwnerID) && sameID(e.ManagementKeyID, f.ManagementKeyID) &&
		sameID(e.ProviderCredentialID, f.ProviderCredentialID) &&
		(f.Model == "" || e.Model == f.Model) && (f.RequestedModel == "" || e.RequestedModel == f.RequestedModel) &&
		(f.Provider == "" || e.Provider == f.Provider) && (f.Status == "" || e.Status == f.Status) && hasTags(e, f.Tags)
}

func add(s *store.UsageSums, e store.UsageEvent) {
	s.Add(store.UsageSums{Requests: 1, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
		CacheReadTokens: e.CacheReadTokens, CacheWriteTokens: e.CacheWriteTokens, CostNanoUSD: e.CostNanoUSD,
		CacheSavingNanoUSD: e.CacheSavingNanoUSD})
}

// noValue is the brute force's name of a tag breakdown's row without a
// value (its key is null).
const noValue = "\x00none"

func idKey(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

func dimension(e store.UsageEvent, by string) string {
	switch by {
	case "model":
		return e.Model
	case "requested_model":
		return e.RequestedModel
	case "provider":
		return e.Provider
	case "owner":
		return idKey(e.OwnerID)
	case "inference_key":
		return idKey(e.InferenceKeyID)
	case "workspace":
		return e.WorkspaceID.String()
	}
	if k, ok := strings.CutPrefix(by, usage.TagPrefix); ok {
		if v, ok := e.Tags[k]; ok {
			return v
		}
		return noValue
	}
	panic(by)
}

var zones = []string{"UTC", "Asia/Kolkata", "Asia/Kathmandu", "America/St_Johns", "America/New_York",
	"Australia/Lord_Howe", "Pacific/Chatham", "Pacific/Kiritimati", "America/Santiago", "Europe/London"}

// window is a random report window in a random zone, ending at a random
// instant of the history.
func window(t *testing.T, r *rand.Rand, base time.Time) usage.Window {
	loc, err := time.LoadLocation(pick(r, zones))
	if err != nil {
		t.Fatal(err)
	}
	now := base.Add(-time.Duration(r.Int64N(int64(40 * 24 * time.Hour))))
	if r.IntN(3) == 0 {
		now = now.Truncate(15 * time.Minute) // on a slot boundary
	}
	period := pick(r, []string{"today", "7d", "30d", "month_to_date", "custom", "custom"})
	var c usage.Custom
	if period == "custom" {
		start := now.Add(-time.Duration(r.Int64N(int64(20 * 24 * time.Hour))))
		if r.IntN(2) == 0 {
			c.StartDate, c.EndDate = start.In(loc).Format(time.DateOnly), now.In(loc).Format(time.DateOnly)
		} else {
			start = start.Add(time.Duration(r.IntN(1e6)) * time.Microsecond)
			c.StartAt, c.EndAt = &start, &now
		}
	}
	w, err := usage.WindowFor(period, loc, now, c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// roll moves a random part of the queue into the rollups, or nothing:
// reports must be exact at any stage of the roller.
func roll(t *testing.T, st *store.Store, r *rand.Rand) {
	t.Helper()
	if r.IntN(3) == 0 {
		return
	}
	if _, err := st.RollUpUsage(context.Background(), 1+r.IntN(400)); err != nil {
		t.Fatal(err)
	}
}

// TestReportsFromRollupsMatchTheEvents is the property the rollups must
// keep: for random events (some shipped twice, the second time altered),
// random tags, time zones, windows and filters (tag filters among them:
// issue 21), the report and every breakdown (by tag too) equal a
// brute-force sum over the events, however far the roller has got.
func TestReportsFromRollupsMatchTheEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		st := store.New(db)
		ctx := context.Background()
		seed := uint64(time.Now().UnixNano())
		r := rand.New(rand.NewPCG(seed, 12))
		t.Logf("seed %d", seed)
		w := newWorld(r)
		base := time.Date(2026, 11, 23, 17, 41, 3, 0, time.UTC)
		var sent []store.UsageEvent
		for batch := 0; batch < 12; batch++ {
			rows := make([]store.UsageEvent, 1+r.IntN(150))
			for i := range rows {
				rows[i] = w.event(r, base)
				if len(sent) > 0 && r.IntN(10) == 0 {
					again := rows[i]
					again.ID = pick(r, sent).ID // a repeat: the first stored wins
					rows[i] = again
				}
			}
			n, err := st.InsertUsageEvents(ctx, rows)
			if err != nil {
				t.Fatal(err)
			}
			stored := 0
			for _, e := range rows {
				if !slices.ContainsFunc(w.events, func(o store.UsageEvent) bool { return o.ID == e.ID }) {
					w.events = append(w.events, e)
					stored++
				}
			}
			if n != stored {
				t.Fatalf("batch %d: stored %d, want %d", batch, n, stored)
			}
			sent = append(sent, rows...)
			roll(t, st, r)
		}
		for round := 0; round < 60; round++ {
			if round%10 == 9 {
				roll(t, st, r)
			}
			win := window(t, r, base)
			f := w.filter(r)
			name := fmt.Sprintf("round %d: %s–%s in %s, filter %+v", round, win.Start, win.End, win.Location, f)
			got, err := usage.Report(ctx, st, usage.Query{Window: win, Filter: f}, base)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var totals, comparison store.UsageSums
			daily := map[string]*store.UsageSums{}
			for _, e := range w.events {
				if selects(f, e, win.Start, win.End) {
					add(&totals, e)
					d := e.OccurredAt.In(win.Location).Format(time.DateOnly)
					if daily[d] == nil {
						daily[d] = &store.UsageSums{}
					}
					add(daily[d], e)
				}
				if selects(f, e, win.PrevStart, win.PrevEnd) {
					add(&comparison, e)
				}
			}
			if got.Totals != usage.Counters(totals) || got.Comparison != usage.Counters(comparison) {
				t.Fatalf("%s:\ntotals %+v, want %+v\ncomparison %+v, want %+v", name, got.Totals, usage.Counters(totals), got.Comparison, usage.Counters(comparison))
			}
			for _, day := range got.Daily {
				want := store.UsageSums{}
				if s := daily[day.Date.Format(time.DateOnly)]; s != nil {
					want = *s
				}
				if day.UsageCounters != usage.Counters(want) {
					t.Fatalf("%s: day %s %+v, want %+v", name, day.Date, day.UsageCounters, usage.Counters(want))
				}
			}
			by := pick(r, store.UsageDimensionNames)
			if r.IntN(2) == 0 {
				by = usage.TagPrefix + pick(r, tagKeys)
			}
			bd, err := usage.Breakdown(ctx, st, usage.Query{Window: win, Filter: f}, by)
			if err != nil {
				t.Fatal(err)
			}
			groups := map[string]*store.UsageSums{}
			for _, e := range w.events {
				if selects(f, e, win.Start, win.End) {
					k := dimension(e, by)
					if groups[k] == nil {
						groups[k] = &store.UsageSums{}
					}
					add(groups[k], e)
				}
			}
			if len(bd.Rows) != len(groups) {
				t.Fatalf("%s: breakdown by %s has %d rows, want %d", name, by, len(bd.Rows), len(groups))
			}
			for _, row := range bd.Rows {
				if row.OverTagLimit {
					t.Fatalf("%s: a row over the tag limit, under it", name)
				}
				if row.NoValue {
					row.Key = noValue
				}
				if s := groups[row.Key]; s == nil || row.UsageCounters != usage.Counters(*s) {
					t.Fatalf("%s: breakdown by %s row %q %+v, want %+v", name, by, row.Key, row.UsageCounters, groups[row.Key])
				}
			}
		}
	})
}
