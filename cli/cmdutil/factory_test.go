package cmdutil

import (
	"errors"
	"testing"
)

// Without a desktop gw login does not run xdg-open (seven lines of its
// noise); it says in one line why no browser opened (issue 22, row 15).
func TestNoBrowserWithoutADesktop(t *testing.T) {
	for _, k := range []string{"DISPLAY", "WAYLAND_DISPLAY", "BROWSER"} {
		t.Setenv(k, "")
	}
	if err := (SystemBrowser{}).Open("http://127.0.0.1:1/cli/authorize"); err == nil || err.Error() != "no graphical session" {
		t.Fatalf("Open without a desktop: %v", err)
	}
}

// A server without a stored key exits like not being logged in at all.
func TestNotLoggedInAtExitsLikeNotLoggedIn(t *testing.T) {
	if !errors.Is(notLoggedInAt{"x"}, ErrNotLoggedIn) {
		t.Fatal("notLoggedInAt must exit like ErrNotLoggedIn")
	}
}
