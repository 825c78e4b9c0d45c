package tui

import "golang.org/x/sys/unix"

// The termios requests askBackground reads and sets the terminal with.
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)
