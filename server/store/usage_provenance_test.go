package store_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// TestUsageProvenanceStoredOnce: events with equal provenances share one
// row of their organization, on every insert path; two organizations
// with the same value each have their own; an event stored before, with
// its provenance inline, reads as it did; the events list and the export
// both read each event's own provenance; and a missing row is an error,
// never an event read without its provenance.
func TestUsageProvenanceStoredOnce(t *testing.T) {
	eachPath(t, func(t *testing.T, db *bun.DB, run func(context.Context, func(*store.Store) error) error) {
		ctx := context.Background()
		st := store.New(db)
		prov := func(version int64, policy string) *store.UsageProvenance {
			return &store.UsageProvenance{BundleVersion: version,
				Prices:   &wire.UsagePrices{InputPerMTok: "0.15", OutputPerMTok: "0.6", CacheReadPerMTok: "0.075", CacheWritePerMTok: "0", CacheWrite1hPerMTok: "0"},
				Policies: []wire.UsagePolicy{{PolicyID: uuid.MustParse("0190a1b2-0000-7000-8000-000000000001"), PolicyName: policy, Action: "allow", Effect: "allow"}}}
		}
		a, b := usageBatch(40), usageBatch(3) // two organizations
		for i := range a {
			a[i].Provenance = prov(int64(1+i%2), "allow") // two values
		}
		a[5].Provenance = nil
		for i := range b {
			b[i].Provenance = prov(1, "allow") // the same value as half of a's
		}
		batch := append(append([]store.UsageEvent{}, a[:20]...), b...)
		for _, part := range [][]store.UsageEvent{batch, a[20:]} {
			if err := run(ctx, func(st *store.Store) error {
				_, err := store.InsertNewUsageEvents(st, ctx, part, noThen)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		// An event stored inline, as gw did before.
		legacy := usageBatch(1)[0]
		legacy.OrgID, legacy.WorkspaceID = a[0].OrgID, a[0].WorkspaceID
		legacy.Provenance, legacy.OccurredAt = prov(9, "legacy"), a[0].OccurredAt.Add(-time.Hour)
		legacy.Bucket = store.UsageBucket(legacy.OccurredAt)
		if _, err := db.NewInsert().Model(&legacy).Exec(ctx); err != nil {
			t.Fatal(err)
		}

		rows := func(org uuid.UUID) int {
			n, err := db.NewSelect().TableExpr("usage_provenances").Where("org_id = ?", org).Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
		if ra, rb := rows(a[0].OrgID), rows(b[0].OrgID); ra != 2 || rb != 1 {
			t.Fatalf("organizations hold %d and %d provenances; want 2 and 1", ra, rb)
		}
		var inline int
		if err := db.NewSelect().TableExpr("usage_events").ColumnExpr("count(*)").Where("provenance IS NOT NULL").Scan(ctx, &inline); err != nil {
			t.Fatal(err)
		}
		if inline != 1 {
			t.Fatalf("%d events hold their provenance inline; want 1 (the legacy one)", inline)
		}

		want := map[uuid.UUID]*store.UsageProvenance{legacy.ID: legacy.Provenance}
		for _, e := range append(append([]store.UsageEvent{}, a...), b...) {
			want[e.ID] = e.Provenance
		}
		check := func(how string, events []store.UsageEvent, n int) {
			t.Helper()
			if len(events) != n {
				t.Fatalf("%s: %d events, want %d", how, len(events), n)
			}
			for _, e := range events {
				if w := want[e.ID]; !reflect.DeepEqual(e.Provenance, w) {
					t.Errorf("%s: event %s has provenance %+v, want %+v", how, e.ID, e.Provenance, w)
				}
			}
		}
		for _, org := range []struct {
			id uuid.UUID
			n  int
		}{{a[0].OrgID, len(a) + 1}, {b[0].OrgID, len(b)}} {
			listed, _, err := st.ListUsageEvents(ctx, store.UsageFilter{OrgID: org.id}, store.PageQuery{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			check("list", listed, org.n)
			var exported []store.UsageEvent
			if err := st.UsageEventsForExport(ctx, org.id, nil, time.Unix(0, 0), time.Now().Add(time.Hour), func(page []store.UsageEvent) error {
				exported = append(exported, page...)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			check("export", exported, org.n)
		}

		// A provenance row gone (a damaged database) is said.
		if _, err := db.NewDelete().TableExpr("usage_provenances").Where("org_id = ?", b[0].OrgID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		_, _, err := st.ListUsageEvents(ctx, store.UsageFilter{OrgID: b[0].OrgID}, store.PageQuery{Limit: 100})
		if err == nil || !strings.Contains(err.Error(), "is not stored") {
			t.Fatalf("events whose provenance is gone read with %v", err)
		}
		if _, err := db.NewDelete().TableExpr("usage_provenances").Where("TRUE").Exec(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestUsageProvenanceIDs: the id is the organization's and the value's,
// a version 8 UUID.
func TestUsageProvenanceIDs(t *testing.T) {
	org1, org2 := uuid.New(), uuid.New()
	body := []byte(`{"prices":null,"bundle_version":1,"policies":[],"budgets":[]}`)
	id := store.ProvenanceID(org1, body)
	if id != store.ProvenanceID(org1, body) || id.Version() != 8 || id.Variant() != uuid.RFC4122 {
		t.Fatalf("id %s: not stable or not a version 8 UUID", id)
	}
	if id == store.ProvenanceID(org2, body) || id == store.ProvenanceID(org1, append(body, ' ')) {
		t.Fatal("different organizations or values share an id")
	}
}

// sameProvenance, which spares a batch's events after the first of a value
// writing their JSON, says two values are one exactly when their JSON is:
// each member changed in turn, nil against empty lists, equal values
// behind distinct pointers.
func TestSameProvenanceIsTheJSON(t *testing.T) {
	if n := reflect.TypeFor[wire.UsageProvenance]().NumField(); n != 6 {
		t.Fatalf("wire.UsageProvenance has %d members; sameProvenance compares 6: compare the new one", n)
	}
	template := fullUsageEvent().Provenance
	template.UpstreamUsage = &wire.UsageCounts{InputTokens: 1, OutputTokens: 2}
	// base is a deep copy of the one template.
	base := func() *store.UsageProvenance {
		p := *template
		prices, upstream := *p.Prices, *p.UpstreamUsage
		p.Prices, p.UpstreamUsage = &prices, &upstream
		p.Policies, p.Budgets = slices.Clone(p.Policies), slices.Clone(p.Budgets)
		return &p
	}
	variants := map[string]func(p *store.UsageProvenance){
		"same":                     func(*store.UsageProvenance) {},
		"bundle version":           func(p *store.UsageProvenance) { p.BundleVersion++ },
		"over bound":               func(p *store.UsageProvenance) { p.OverBound = true },
		"no prices":                func(p *store.UsageProvenance) { p.Prices = nil },
		"a price":                  func(p *store.UsageProvenance) { p.Prices.OutputPerMTok = "0.61" },
		"the price class":          func(p *store.UsageProvenance) { p.Prices.PriceClass = "" },
		"no upstream usage":        func(p *store.UsageProvenance) { p.UpstreamUsage = nil },
		"upstream usage":           func(p *store.UsageProvenance) { p.UpstreamUsage.CacheReadTokens = 3 },
		"policies nil":             func(p *store.UsageProvenance) { p.Policies = nil },
		"policies empty":           func(p *store.UsageProvenance) { p.Policies = []wire.UsagePolicy{} },
		"a policy's rule":          func(p *store.UsageProvenance) { p.Policies[0].RuleIndex = 3 },
		"one more policy":          func(p *store.UsageProvenance) { p.Policies = append(p.Policies, p.Policies[0]) },
		"budgets nil":              func(p *store.UsageProvenance) { p.Budgets = nil },
		"budgets empty":            func(p *store.UsageProvenance) { p.Budgets = []wire.UsageBudget{} },
		"a budget's amount":        func(p *store.UsageProvenance) { p.Budgets[0].AmountUSD = "1" },
		"a budget's policy":        func(p *store.UsageProvenance) { p.Budgets[0].PolicyID = uuid.New() },
		"prices copied, same":      func(p *store.UsageProvenance) { c := *p.Prices; p.Prices = &c },
		"policies copied, same":    func(p *store.UsageProvenance) { p.Policies = slices.Clone(p.Policies) },
		"upstream usage copied":    func(p *store.UsageProvenance) { c := *p.UpstreamUsage; p.UpstreamUsage = &c },
		"budgets copied, same":     func(p *store.UsageProvenance) { p.Budgets = slices.Clone(p.Budgets) },
		"prices' service tier set": func(p *store.UsageProvenance) { p.Prices.ServiceTier = "flex" },
	}
	json := func(p *store.UsageProvenance) string {
		return string(wire.AppendUsageProvenanceJSON(nil, (*wire.UsageProvenance)(p)))
	}
	for name, change := range variants {
		a, b := base(), base()
		change(b)
		for _, pair := range [][2]*store.UsageProvenance{{a, b}, {b, a}} {
			if got, want := store.SameProvenance(pair[0], pair[1]), json(pair[0]) == json(pair[1]); got != want {
				t.Errorf("%s: sameProvenance %v, the JSON equal %v", name, got, want)
			}
		}
	}
	// Both empty-list spellings against each other.
	a, b := base(), base()
	a.Policies, b.Policies = nil, []wire.UsagePolicy{}
	if store.SameProvenance(a, b) {
		t.Error("a nil policy list and an empty one taken as one value")
	}
}
