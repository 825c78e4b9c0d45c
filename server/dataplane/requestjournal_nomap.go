//go:build !unix

package dataplane

import "os"

// newJournalStore: no shared memory map here (golang.org/x/sys/unix's
// Mmap is unix only); each step is one pwrite(2).
func newJournalStore(f *os.File, initial []byte) (journalStore, error) {
	return newJournalWriteAt(f, initial), nil
}
