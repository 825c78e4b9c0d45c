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
	mappedFile
}

func newJournalStore(f *os.File, _ []byte) (journalStore, error) {
	m, err := newMappedFile(f, journalHeaderSize, slotsPerSegment*slotSize, "request journal")
	if err != nil {
		return nil, err
	}
	return &journalMap{m}, nil
}

func (m *journalMap) slot(i int) ([]byte, error) {
	seg, err := m.segment(i / slotsPerSegment)
	if err != nil {
		return nil, err
	}
	at := (i % slotsPerSegment) * slotSize
	return seg[at : at+slotSize : at+slotSize], nil
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
	err := m.unmap()
	return errors.Join(err, m.f.Truncate(journalHeaderSize), m.f.Close())
}

// mappedFile maps a file from base on in segments of segSize bytes
// (MAP_SHARED), growing the file (ftruncate) as each is mapped. A segment
// once mapped stays where it is until unmap: memory a writer holds never
// moves. The request journal's slots and the budget journal's lines
// (budgetjournal_mmap.go) are stored in one.
type mappedFile struct {
	f    *os.File
	fd   int
	what string
	// size is the file's length; base where the first segment starts.
	size, base, segSize int64
	segs                []mappedSegment
}

// mappedSegment is a mapping and where its segment starts in it (a
// mapping starts on a page, a segment need not).
type mappedSegment struct {
	mem   []byte
	first int
}

func newMappedFile(f *os.File, base, segSize int64, what string) (mappedFile, error) {
	fi, err := f.Stat()
	if err != nil {
		return mappedFile{}, err
	}
	return mappedFile{f: f, fd: int(f.Fd()), what: what, size: fi.Size(), base: base, segSize: segSize}, nil
}

// segment returns segment k's bytes, mapping it, and those before it,
// first.
func (m *mappedFile) segment(k int) ([]byte, error) {
	for len(m.segs) <= k {
		if err := m.grow(); err != nil {
			return nil, err
		}
	}
	s := m.segs[k]
	return s.mem[s.first : s.first+int(m.segSize) : s.first+int(m.segSize)], nil
}

// grow extends the file by a segment of zeros and maps it.
func (m *mappedFile) grow() error {
	off := m.base + int64(len(m.segs))*m.segSize
	end := off + m.segSize
	if m.size < end {
		if err := m.f.Truncate(end); err != nil {
			return fmt.Errorf("grow %s: %w", m.what, err)
		}
		m.size = end
	}
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	mem, err := unix.Mmap(m.fd, start, int(end-start), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map %s: %w", m.what, err)
	}
	populate(mem)
	m.segs = append(m.segs, mappedSegment{mem: mem, first: int(off - start)})
	return nil
}

// unmap unmaps every segment: only once nothing can store to them.
func (m *mappedFile) unmap() error {
	var errs []error
	for _, s := range m.segs {
		errs = append(errs, unix.Munmap(s.mem))
	}
	m.segs = nil
	return errors.Join(errs...)
}
