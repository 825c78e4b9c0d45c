//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package tui

import (
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// askBackground sends the background colour query (OSC 11) followed by a
// cursor position query, which every terminal answers, and reads until the
// cursor's answer arrives or timeout passes. ok is false when the terminal
// did not say its background in time.
func askBackground(tty *os.File, term string, timeout time.Duration) (dark, ok bool) {
	// Multiplexers may join several terminals; termenv does not ask them
	// either.
	for _, p := range []string{"screen", "tmux", "dumb"} {
		if strings.HasPrefix(term, p) {
			return false, false
		}
	}
	fd := int(tty.Fd())
	saved, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return false, false
	}
	defer unix.IoctlSetTermios(fd, ioctlSetTermios, saved) //nolint:errcheck // restoring what was read
	quiet := *saved
	quiet.Lflag &^= unix.ECHO | unix.ICANON
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet); err != nil {
		return false, false
	}
	if _, err := io.WriteString(tty, "\x1b]11;?\x1b\\\x1b[6n"); err != nil {
		return false, false
	}
	deadline := time.Now().Add(timeout)
	var answer []byte
	buf := make([]byte, 256)
	for !cursorAnswered(answer) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		var readable unix.FdSet
		readable.Set(fd)
		tv := unix.NsecToTimeval(left.Nanoseconds())
		n, err := unix.Select(fd+1, &readable, nil, nil, &tv)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		m, err := unix.Read(fd, buf)
		if err != nil || m <= 0 {
			break
		}
		answer = append(answer, buf[:m]...)
	}
	return backgroundIsDark(string(answer))
}
