//go:build unix && !linux

package dataplane

// populate leaves a new mapping's pages to fault in at their first store
// (MADV_POPULATE_WRITE is Linux's).
func populate([]byte) {}
