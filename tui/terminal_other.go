//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package tui

import (
	"os"
	"time"
)

// askBackground does not ask where the terminal cannot be set quiet the
// same way (Windows): the dashboard takes the background to be dark.
func askBackground(_ *os.File, _ string, _ time.Duration) (dark, ok bool) { return false, false }
