package store

// SetUsageExportPage sets the export's page size for a test, returning
// the previous one.
func SetUsageExportPage(n int) int {
	old := usageExportPage
	usageExportPage = n
	return old
}
