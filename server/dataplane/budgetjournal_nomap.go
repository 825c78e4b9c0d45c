//go:build !unix

package dataplane

import "os"

// newBudgetStore: no shared memory map here (golang.org/x/sys/unix's
// Mmap is unix only); each change is one pwrite(2).
func newBudgetStore(f *os.File) (budgetStore, error) { return newBudgetWriteAt(f), nil }
