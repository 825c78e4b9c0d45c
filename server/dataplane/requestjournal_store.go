package dataplane

import "os"

// journalStore holds a request journal's slots: a shared memory map of
// the file where there is one (journalMap), whose stores are the writes;
// else copies in memory, each step's changes written with pwrite(2)
// (journalWriteAt).
type journalStore interface {
	// slot returns slot i's bytes, growing the file to hold it. They stay
	// where they are while the journal is open.
	slot(i int) ([]byte, error)
	// flush writes mem[from:to] of slot i, changed by one step, where
	// stores to mem are not yet the file's.
	flush(i int, mem []byte, from, to int) error
	// close closes the file, emptied of its slots when empty says so.
	close(empty bool) error
}

// journalWriteAt writes each step with one pwrite(2), never torn by a
// kill: gw's way before the mapping, kept where there is none (Windows).
type journalWriteAt struct {
	f *os.File
	// initial is the file as written at the start (the remnants).
	initial []byte
}

func newJournalWriteAt(f *os.File, initial []byte) *journalWriteAt {
	return &journalWriteAt{f: f, initial: initial}
}

func (w *journalWriteAt) slot(i int) ([]byte, error) {
	mem := make([]byte, slotSize)
	if off := journalHeaderSize + i*slotSize; off < len(w.initial) {
		copy(mem, w.initial[off:])
	}
	return mem, nil
}

func (w *journalWriteAt) flush(i int, mem []byte, from, to int) error {
	_, err := w.f.WriteAt(mem[from:to], int64(journalHeaderSize+i*slotSize+from))
	return err
}

func (w *journalWriteAt) close(empty bool) error {
	var err error
	if empty {
		err = w.f.Truncate(journalHeaderSize)
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}
