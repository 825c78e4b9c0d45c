package dataplane

import (
	"errors"
	"os"
)

// budgetSegment is how much the budget journal's file grows by, each
// step mapped on its own (mappedFile): a quarter of the size past which
// it is compacted (compactAbove), so a few mappings at most.
const budgetSegment = 256 << 10

// budgetStore holds the budget journal's file: a shared memory map of it
// where there is one (budgetMap, unix), whose stores are the writes; else
// one pwrite(2) a change (budgetWriteAt).
type budgetStore interface {
	// put stores change b at off, the length written so far, so that a
	// process killed at any instant leaves it whole or not at all to a
	// reader that stops at the first NUL.
	put(off int64, b []byte) error
	// close closes the file, cut to length n first unless n < 0.
	close(n int64) error
	// watch has observe see every store (tests).
	watch(observe func(off int64, b []byte, whole bool))
}

// budgetWriteAt writes each change with one pwrite(2), never torn by a
// kill: gw's way before the mapping, kept where there is none (Windows).
// The file is only ever as long as what was written.
type budgetWriteAt struct {
	f       *os.File
	observe func(off int64, b []byte, whole bool)
}

func newBudgetWriteAt(f *os.File) *budgetWriteAt { return &budgetWriteAt{f: f} }

func (w *budgetWriteAt) put(off int64, b []byte) error {
	if w.observe != nil {
		w.observe(off, append([]byte(nil), b...), true)
	}
	_, err := w.f.WriteAt(b, off)
	return err
}

func (w *budgetWriteAt) close(n int64) error {
	var err error
	if n >= 0 {
		err = w.f.Truncate(n)
	}
	return errors.Join(err, w.f.Close())
}

func (w *budgetWriteAt) watch(observe func(off int64, b []byte, whole bool)) { w.observe = observe }
