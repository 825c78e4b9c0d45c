package store

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
