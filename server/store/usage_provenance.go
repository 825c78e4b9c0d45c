package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/wire"
)

// An event's provenance is stored once per distinct value (issue 33,
// migration 20261203010001): it is most of an event's row, and the same
// for every request of a key until its bundle or its prices change. A new
// event's row carries the id of its provenance in usage_provenances and
// leaves the provenance column NULL; events stored before keep theirs
// inline, and every read takes whichever is set.

// usageProvenance is one distinct provenance of an organization.
type usageProvenance struct {
	bun.BaseModel `bun:"table:usage_provenances"`

	ID        uuid.UUID `bun:"id,pk,type:uuid"`
	OrgID     uuid.UUID `bun:"org_id,type:uuid"`
	Body      string    `bun:"body"`
	CreatedAt time.Time `bun:"created_at"`
}

// provenanceID names a provenance: a hash of its organization and its
// JSON, so equal values share an id without a lookup and two
// organizations' values never share a row (server/tags.SetID likewise).
func provenanceID(org uuid.UUID, body []byte) uuid.UUID {
	h := sha256.New()
	h.Write(org[:])
	h.Write(body)
	var sum [sha256.Size]byte
	var id uuid.UUID
	copy(id[:], h.Sum(sum[:0]))
	id[6] = (id[6] & 0x0f) | 0x80 // version 8: custom
	id[8] = (id[8] & 0x3f) | 0x80 // RFC 4122 variant
	return id
}

var provenanceSeed = maphash.MakeSeed()

// internProvenances stores the distinct provenances of events that
// usage_provenances does not hold yet, and points each event with a
// provenance at its row (ProvenanceID), which is what the insert then
// writes instead of the JSON. It runs in the events' transaction, so a
// provenance row commits or rolls back with the first events that need
// it. New rows are inserted in id order, so concurrent batches wait for
// each other rather than deadlock (PostgreSQL).
func internProvenances(ctx context.Context, db bun.IDB, events []UsageEvent) error {
	type distinct struct {
		org  uuid.UUID
		body []byte
		id   uuid.UUID
	}
	var (
		found   []distinct
		byHash  map[uint64][]int
		scratch []byte
		ids     []uuid.UUID // the events' ids, one array for the batch
	)
	// prev is the last event's provenance, found at found[prevAt]: the
	// next is most often the same value (the same key, model and
	// bundle), told by comparing the two, not by writing its JSON.
	var (
		prev   *UsageProvenance
		prevAt int
	)
	for i := range events {
		e := &events[i]
		if e.Provenance == nil {
			e.ProvenanceID = nil
			continue
		}
		if ids == nil {
			ids, byHash = make([]uuid.UUID, len(events)), map[uint64][]int{}
		}
		if prev != nil && found[prevAt].org == e.OrgID && sameProvenance(prev, e.Provenance) {
			ids[i] = found[prevAt].id
			e.ProvenanceID = &ids[i]
			continue
		}
		// Most events of a batch share a few values: one cheap hash and a
		// comparison find the value's id; SHA-256 runs once per value.
		scratch = wire.AppendUsageProvenanceJSON(scratch[:0], (*wire.UsageProvenance)(e.Provenance))
		var mh maphash.Hash
		mh.SetSeed(provenanceSeed)
		_, _ = mh.Write(e.OrgID[:])
		_, _ = mh.Write(scratch)
		key := mh.Sum64()
		at := -1
		for _, k := range byHash[key] {
			if found[k].org == e.OrgID && bytes.Equal(found[k].body, scratch) {
				at = k
				break
			}
		}
		if at < 0 {
			at = len(found)
			found = append(found, distinct{org: e.OrgID, body: slices.Clone(scratch), id: provenanceID(e.OrgID, scratch)})
			byHash[key] = append(byHash[key], at)
		}
		ids[i] = found[at].id
		e.ProvenanceID = &ids[i]
		prev, prevAt = e.Provenance, at
	}
	if len(found) == 0 {
		return nil
	}
	want := make([]uuid.UUID, len(found))
	for i := range found {
		want[i] = found[i].id
	}
	var known []uuid.UUID
	if err := db.NewSelect().Model((*usageProvenance)(nil)).Column("id").Where("id IN (?)", bun.List(want)).Scan(ctx, &known); err != nil {
		return fmt.Errorf("read usage provenances: %w", mapErr(err))
	}
	stored := make(map[uuid.UUID]bool, len(known))
	for _, id := range known {
		stored[id] = true
	}
	var rows []usageProvenance
	now := Now()
	for _, d := range found {
		if !stored[d.id] {
			rows = append(rows, usageProvenance{ID: d.id, OrgID: d.org, Body: string(d.body), CreatedAt: now})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	slices.SortFunc(rows, func(a, b usageProvenance) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	if _, err := db.NewInsert().Model(&rows).On("CONFLICT (id) DO NOTHING").Returning("NULL").Exec(ctx); err != nil {
		return fmt.Errorf("store usage provenances: %w", mapErr(err))
	}
	return nil
}

// withProvenances fills the provenance of events stored with only its id,
// from org's rows (every event read is org's: the reads filter on it).
// Events sharing a value share one decoded copy, which callers only read.
func withProvenances(ctx context.Context, db bun.IDB, org uuid.UUID, events []UsageEvent) error {
	var want []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for i := range events {
		if id := events[i].ProvenanceID; id != nil && events[i].Provenance == nil && !seen[*id] {
			seen[*id] = true
			want = append(want, *id)
		}
	}
	if len(want) == 0 {
		return nil
	}
	var rows []usageProvenance
	if err := db.NewSelect().Model(&rows).Column("id", "body").Where("org_id = ?", org).Where("id IN (?)", bun.List(want)).Scan(ctx); err != nil {
		return fmt.Errorf("read usage provenances: %w", mapErr(err))
	}
	decoded := make(map[uuid.UUID]*UsageProvenance, len(rows))
	for _, r := range rows {
		p := new(UsageProvenance)
		if err := p.Scan(r.Body); err != nil {
			return fmt.Errorf("usage provenance %s: %w", r.ID, err)
		}
		decoded[r.ID] = p
	}
	for i := range events {
		e := &events[i]
		if e.ProvenanceID == nil || e.Provenance != nil {
			continue
		}
		p, ok := decoded[*e.ProvenanceID]
		if !ok {
			// Stored in the event's own transaction: a missing row is a
			// damaged database, said rather than read as no provenance.
			return fmt.Errorf("usage event %s: its provenance %s is not stored", e.ID, *e.ProvenanceID)
		}
		e.Provenance = p
	}
	return nil
}

// sameProvenance reports whether a and b are one value: whether their JSON
// (wire.AppendUsageProvenanceJSON) is the same, which writes a nil list
// as null and an empty one as [], so those differ here too. A test holds
// it to the JSON, and fails when the type gains a member.
func sameProvenance(a, b *UsageProvenance) bool {
	if a == b {
		return true
	}
	return a.BundleVersion == b.BundleVersion && a.OverBound == b.OverBound &&
		samePointee(a.Prices, b.Prices) && samePointee(a.UpstreamUsage, b.UpstreamUsage) &&
		sameList(a.Policies, b.Policies) && sameList(a.Budgets, b.Budgets)
}

func samePointee[T comparable](a, b *T) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

func sameList[T comparable](a, b []T) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}
