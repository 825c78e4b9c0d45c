//go:build unix

package dataplane

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime/debug"
	"sync/atomic"
	"unsafe"
)

// budgetMap holds the budget journal in shared memory maps of its file
// (MAP_SHARED): a change is stores into the page cache, which a killed
// process's successor reads as it read write(2)'s bytes, without a
// system call. Past what was written the file is zeros, which Close cuts.
type budgetMap struct {
	mappedFile
	observe func(off int64, b []byte, whole bool)
}

func newBudgetStore(f *os.File) (budgetStore, error) {
	m, err := newMappedFile(f, 0, budgetSegment, "budget journal")
	if err != nil {
		return nil, err
	}
	return &budgetMap{mappedFile: m}, nil
}

// put stores change b at off: all of it but its first byte (a copy, in
// whatever order memmove stores, across segments where b straddles
// two), then that first byte, alone and last. Until it is stored, the
// reader stops at off, the zero it was: a kill leaves the change whole
// or not at all. (No line starts with a NUL: each starts with a counter's
// name.) A store to a page the file system cannot back (a full disk)
// faults; the fault is returned as an error, as a failed write(2)'s was.
func (m *budgetMap) put(off int64, b []byte) (err error) {
	if len(b) == 0 {
		return nil
	}
	defer catchMapFault(&err, debug.SetPanicOnFault(true))
	end := off + int64(len(b))
	if _, err := m.segment(int((end - 1) / m.segSize)); err != nil {
		return err
	}
	for at := off + 1; at < end; {
		seg := m.segs[at/m.segSize]
		in := int(at % m.segSize)
		n := copy(seg.mem[seg.first+in:seg.first+int(m.segSize)], b[at-off:])
		if m.observe != nil {
			m.observe(at, append([]byte(nil), b[at-off:at-off+int64(n)]...), false)
		}
		at += int64(n)
	}
	seg := m.segs[off/m.segSize]
	storeByteLast(seg.mem, seg.first+int(off%m.segSize), b[0])
	if m.observe != nil {
		m.observe(off, b[:1:1], true)
	}
	return nil
}

// storeByteLast stores v at mem[i], after every store before it: one
// byte cannot be torn, and a kill stops a process between two of its
// instructions, with all those before in the page cache; what is left
// is the compiler's order, which an atomic store keeps (the Go memory
// model: the copies before it happen before it). sync/atomic has no byte
// store, so the aligned word holding the byte is swapped with the byte
// set in it; its other bytes are the change's own, already stored, or
// the change's before it, which no one stores to again. mem starts on a
// page, so the word is in it.
func storeByteLast(mem []byte, i int, v byte) {
	a := int(uintptr(unsafe.Pointer(&mem[i])) & 3)
	w := (*uint32)(unsafe.Pointer(&mem[i-a]))
	var mask, set [4]byte
	mask[a], set[a] = 0xff, v
	m, s := binary.NativeEndian.Uint32(mask[:]), binary.NativeEndian.Uint32(set[:])
	for {
		old := atomic.LoadUint32(w)
		if atomic.CompareAndSwapUint32(w, old, old&^m|s) {
			return
		}
	}
}

// catchMapFault, deferred as catchMapFault(&err, debug.SetPanicOnFault(true)),
// turns a fault on a mapping into *err, as the request journal's
// recoverFault does: a store to a page the file system cannot back
// raises SIGBUS, which would otherwise kill the process. Other panics go
// on.
func catchMapFault(err *error, was bool) {
	debug.SetPanicOnFault(was)
	if r := recover(); r != nil {
		*err = mapFault(r, "budget journal")
	}
}

// close unmaps the file (nothing stores to it outside the journal's
// lock) and cuts it to n, what was written, unless n < 0.
func (m *budgetMap) close(n int64) error {
	err := m.unmap()
	if n >= 0 {
		err = errors.Join(err, m.f.Truncate(n))
	}
	return errors.Join(err, m.f.Close())
}

func (m *budgetMap) watch(observe func(off int64, b []byte, whole bool)) { m.observe = observe }
