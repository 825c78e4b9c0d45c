package store

import "strconv"

// Exported for the tests of package store_test, which cannot be in package
// store: storetest imports it.
var (
	InsertNewUsageEvents = (*Store).insertNewUsageEvents
	UsageEventColumns    = usageEventColumns
	ProvenanceID         = provenanceID
	SQLiteLeanColumns    = sqliteLeanColumns
	SQLiteLean           = sqliteLean
	SameProvenance       = sameProvenance
)

// SQLiteDefaultColumns are the columns a lean SQLite insert leaves out.
func SQLiteDefaultColumns() []string {
	var out []string
	for _, d := range sqliteDefaults {
		out = append(out, d.column)
	}
	return out
}

// ChunkSize and SQLiteInsertStatements show the SQLite path's chunks and
// how many statements it keeps prepared.
var ChunkSize = chunkSize

func SQLiteInsertStatements(s *Store) int {
	s.inserts.mu.Lock()
	defer s.inserts.mu.Unlock()
	return len(s.inserts.stmts)
}

// SQLitePlan is sqlitePlan's order (the events' ids), its segments as
// "kind:end" and whether it copied the events.
func SQLitePlan(events []UsageEvent) (ids []string, segs []string, copied bool) {
	out, ss := sqlitePlan(events)
	for _, e := range out {
		ids = append(ids, e.ID.String())
	}
	for _, s := range ss {
		segs = append(segs, [...]string{"full", "lean", "run"}[s.kind]+":"+strconv.Itoa(s.end))
	}
	return ids, segs, len(out) > 0 && &out[0] != &events[0]
}
