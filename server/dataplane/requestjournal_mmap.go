//go:build unix

package dataplane

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// slotsPerSegment is how many slots the file grows by, each such segment
// mapped on its own and never unmapped while the journal is open: a
// growth never moves the memory a request is writing.
const slotsPerSegment = 64

// journalMap holds the journal's slots in shared memory maps of the file
// (MAP_SHARED): a store lands in the page cache, which a killed process's
// successor reads as it would a pwrite's bytes, without a system call.
type journalMap struct {
	f    *os.File
	fd   int
	size int64
	segs []mappedSegment
}

// mappedSegment is a mapping and where its first slot starts in it (a
// mapping starts on a page, the slots do not).
type mappedSegment struct {
	mem   []byte
	first int
}

func newJournalStore(f *os.File, _ []byte) (journalStore, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &journalMap{f: f, fd: int(f.Fd()), size: fi.Size()}, nil
}

func (m *journalMap) slot(i int) ([]byte, error) {
	for len(m.segs) <= i/slotsPerSegment {
		if err := m.grow(); err != nil {
			return nil, err
		}
	}
	seg := m.segs[i/slotsPerSegment]
	at := seg.first + (i%slotsPerSegment)*slotSize
	return seg.mem[at : at+slotSize : at+slotSize], nil
}

// grow extends the file by a segment of free (zero) slots and maps it.
func (m *journalMap) grow() error {
	off := int64(journalHeaderSize) + int64(len(m.segs))*slotsPerSegment*slotSize
	end := off + slotsPerSegment*slotSize
	if m.size < end {
		if err := m.f.Truncate(end); err != nil {
			return fmt.Errorf("grow request journal: %w", err)
		}
		m.size = end
	}
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	mem, err := unix.Mmap(m.fd, start, int(end-start), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map request journal: %w", err)
	}
	m.segs = append(m.segs, mappedSegment{mem: mem, first: int(off - start)})
	return nil
}

// flush: a store to the mapping is the file's already.
func (m *journalMap) flush(int, []byte, int, int) error { return nil }

// close unmaps the file only when it is emptied: then no slot is held,
// and none can be written again. Otherwise a request still holding one
// may store to it; the mappings go with the process.
func (m *journalMap) close(empty bool) error {
	if !empty {
		return m.f.Close()
	}
	var errs []error
	for _, s := range m.segs {
		errs = append(errs, unix.Munmap(s.mem))
	}
	m.segs = nil
	errs = append(errs, m.f.Truncate(journalHeaderSize), m.f.Close())
	return errors.Join(errs...)
}
