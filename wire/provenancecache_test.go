package wire

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
)

// cacheEvent is an event naming p, as a data plane records one.
func cacheEvent(p *UsageProvenance) UsageEventIn {
	key, owner := uuid.New(), uuid.New()
	return UsageEventIn{ID: uuid.New(), OrgID: uuid.New(), WorkspaceID: uuid.New(), InferenceKeyID: &key, OwnerID: &owner,
		Model: "openai/gpt-4o-mini", Provider: "openai", InputTokens: 19, OutputTokens: 10, CostUSD: "0.00000885", Status: "ok",
		OccurredAt: time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC), Provenance: p}
}

// The cache writes each event as json.Marshal does, whatever came before
// it: the same provenance again (from the cache), and every way a
// provenance can differ from the one cached — prices, bundle version,
// overage, upstream usage, another list (equal or not), a list nil or
// empty — and back.
func TestProvenanceCacheWritesWhatMarshalWrites(t *testing.T) {
	id := uuid.New()
	policies := []UsagePolicy{{PolicyID: id, PolicyName: "allowlist", Action: "allow", Effect: "allow"}, {PolicyID: id, PolicyName: "limits", RuleIndex: 1, Action: "limit", Effect: "limit"}}
	budgets := []UsageBudget{{PolicyID: id, PolicyName: "budget", Counter: "budget:shared", Period: "day", Aggregation: "shared", AmountUSD: "1000000"}}
	prices := func() *UsagePrices {
		return &UsagePrices{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0", CacheWrite1hPerMTok: "0"}
	}
	base := func() *UsageProvenance {
		return &UsageProvenance{Prices: prices(), BundleVersion: 7, Policies: policies, Budgets: budgets}
	}
	otherPrices := base()
	otherPrices.Prices.OutputPerMTok = "0.61"
	tier := base()
	tier.Prices.ServiceTier = "priority"
	noPrices := base()
	noPrices.Prices = nil
	version := base()
	version.BundleVersion = 8
	over := base()
	over.OverBound = true
	upstream := base()
	upstream.UpstreamUsage = &UsageCounts{InputTokens: 1}
	equalCopy := base()
	equalCopy.Policies = append([]UsagePolicy(nil), policies...)
	shorter := base()
	shorter.Policies = policies[:1]
	otherList := base() // as long, other rules
	otherList.Policies = append([]UsagePolicy(nil), policies...)
	otherList.Policies[1].PolicyName = "other"
	emptyBudgets := base()
	emptyBudgets.Budgets = []UsageBudget{}
	nilBudgets := base()
	nilBudgets.Budgets = nil
	var c ProvenanceCache
	seq := []*UsageProvenance{base(), base(), otherPrices, base(), tier, noPrices, noPrices, base(), version, over, base(),
		upstream, base(), equalCopy, base(), shorter, base(), otherList, base(), emptyBudgets, nilBudgets, emptyBudgets, base(), nil, base()}
	for i, p := range seq {
		e := cacheEvent(p)
		want, err := json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.AppendUsageEventInJSON([]byte("prefix"), &e)
		if err != nil || string(got) != "prefix"+string(want) {
			t.Fatalf("event %d:\n got %s\nwant prefix%s", i, got, want)
		}
	}
}

// Events of many keys at once, each its own lists, keep their own
// provenances (one slot each, mostly): written by many goroutines, every
// line is still json.Marshal's (go test -race).
func TestProvenanceCacheConcurrent(t *testing.T) {
	var c ProvenanceCache
	keys := make([]*UsageProvenance, 100)
	for i := range keys {
		keys[i] = &UsageProvenance{Prices: &UsagePrices{InputPerMTok: "1"}, BundleVersion: int64(i),
			Policies: []UsagePolicy{{PolicyID: uuid.New(), PolicyName: "p", Action: "allow", Effect: "allow"}}, Budgets: []UsageBudget{}}
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			var err error
			for i := range 2000 {
				e := cacheEvent(keys[(i*7+g)%len(keys)])
				want, _ := json.Marshal(&e)
				if got, _ := c.AppendUsageEventInJSON(nil, &e); string(got) != string(want) && err == nil {
					err = &mismatch{got: string(got), want: string(want)}
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

type mismatch struct{ got, want string }

func (m *mismatch) Error() string { return "got " + m.got + "\nwant " + m.want }

// BenchmarkProvenanceCache: an event as a data plane records it (a key
// under two policies and a budget), its provenance written each time or
// from the cache.
func BenchmarkProvenanceCache(b *testing.B) {
	id := uuid.New()
	p := &UsageProvenance{Prices: &UsagePrices{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0", CacheWrite1hPerMTok: "0"},
		BundleVersion: 7, Policies: []UsagePolicy{{PolicyID: id, PolicyName: "allowlist", Action: "allow", Effect: "allow"}, {PolicyID: id, PolicyName: "limits", Action: "limit", Effect: "limit"}},
		Budgets: []UsageBudget{{PolicyID: id, PolicyName: "budget", Counter: "budget:shared", Period: "day", Aggregation: "shared", AmountUSD: "1000000"}}}
	e := cacheEvent(p)
	buf := make([]byte, 0, 4096)
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			buf, _ = AppendUsageEventInJSON(buf[:0], &e)
		}
	})
	b.Run("cached", func(b *testing.B) {
		var c ProvenanceCache
		for b.Loop() {
			buf, _ = c.AppendUsageEventInJSON(buf[:0], &e)
		}
	})
}

// Two provenances are the same to the cache only when their lists are
// the same arrays (the slots mostly keep other lists apart, so this is
// tested here rather than through them).
func TestProvenanceCacheSameList(t *testing.T) {
	a := []UsagePolicy{{PolicyName: "a"}, {PolicyName: "b"}}
	equal := append([]UsagePolicy(nil), a...)
	for _, c := range []struct {
		name string
		x, y []UsagePolicy
		same bool
	}{
		{"same", a, a, true},
		{"equal-copy", a, equal, false},
		{"prefix", a, a[:1], false},
		{"same-start-other-length", a[:1], a[:2], false},
		{"nil-nil", nil, nil, true},
		{"empty-empty", a[:0], []UsagePolicy{}, true},
		{"nil-empty", nil, []UsagePolicy{}, false},
	} {
		if got := sameList(c.x, c.y); got != c.same {
			t.Errorf("%s: sameList = %v", c.name, got)
		}
	}
	l := &cachedProvenance{hasPrices: true, prices: UsagePrices{InputPerMTok: "1"}, version: 3, policies: a}
	if !l.is(&UsageProvenance{Prices: &UsagePrices{InputPerMTok: "1"}, BundleVersion: 3, Policies: a}) ||
		l.is(&UsageProvenance{Prices: &UsagePrices{InputPerMTok: "1"}, BundleVersion: 3, Policies: equal}) {
		t.Error("a provenance is the cached one by its lists' arrays, not their contents")
	}
}
