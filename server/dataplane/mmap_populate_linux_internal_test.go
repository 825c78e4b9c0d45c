//go:build linux

package dataplane

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A journal's new segment is in memory, every page of it, before the
// first store to it: the stores on a request's path take no page fault.
func TestMappedSegmentsArePopulated(t *testing.T) {
	probe, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(probe)
	if err := unix.Madvise(probe, unix.MADV_POPULATE_WRITE); errors.Is(err, unix.EINVAL) {
		t.Skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14)")
	}
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "journal"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := newMappedFile(f, 0, budgetSegment, "test journal")
	if err != nil {
		t.Fatal(err)
	}
	defer m.unmap()
	for k := range 2 {
		if _, err := m.segment(k); err != nil {
			t.Fatal(err)
		}
		mem := m.segs[k].mem
		resident := make([]byte, (len(mem)+os.Getpagesize()-1)/os.Getpagesize())
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)),
			uintptr(unsafe.Pointer(&resident[0]))); errno != 0 {
			t.Fatal(errno)
		}
		for i, r := range resident {
			if r&1 == 0 {
				t.Fatalf("segment %d: page %d of %d is not in memory before its first store", k, i, len(resident))
			}
		}
	}
}
