package store

// Exported for the tests of package store_test, which cannot be in package
// store: storetest imports it.
var (
	InsertNewUsageEvents = (*Store).insertNewUsageEvents
	UsageEventColumns    = usageEventColumns
	ProvenanceID         = provenanceID
)
