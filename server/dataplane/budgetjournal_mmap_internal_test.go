//go:build unix

package dataplane

// segments is how many mappings the journal has.
func (m *budgetMap) segments() int { return len(m.segs) }
