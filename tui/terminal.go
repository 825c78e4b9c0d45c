package tui

import (
	"io"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/gw-gateway/gw/tui/internal/noprobe"
)

// bubbletea's init has run by now (this package imports it) without
// querying the terminal; see package noprobe.
func init() { noprobe.Restore() }

// colourQueryTimeout bounds the wait for the terminal's answer to the
// background colour query. Terminals answer within milliseconds; one that
// never answers (a serial console, some multiplexers) must not hold the
// dashboard blank and deaf to q for termenv's 5 s per read.
const colourQueryTimeout = 300 * time.Millisecond

// queryTerminal gives lipgloss a renderer on out that knows the
// terminal's background, asked now, before the program takes the
// terminal over (then the answer would be read as key presses). The
// default renderer's answer was fixed at init without asking, and only
// the dashboard should ask. Without an answer in time, the background is
// taken to be dark, as termenv does.
func queryTerminal(out io.Writer) {
	r := lipgloss.NewRenderer(out)
	dark := true
	if f, ok := out.(*os.File); ok {
		if d, ok := askBackground(f, os.Getenv("TERM"), colourQueryTimeout); ok {
			dark = d
		}
	}
	r.SetHasDarkBackground(dark)
	lipgloss.SetDefaultRenderer(r)
}

var oscBackground = regexp.MustCompile(`\x1b\]11;rgba?:([0-9a-fA-F]{1,4})/([0-9a-fA-F]{1,4})/([0-9a-fA-F]{1,4})`)

var cursorAnswer = regexp.MustCompile(`\x1b\[\d+;\d+R`)

func cursorAnswered(b []byte) bool { return cursorAnswer.Match(b) }

// backgroundIsDark reads an OSC 11 answer (rgb:RRRR/GGGG/BBBB, 1 to 4 hex
// digits a channel): dark when its lightness is below one half.
func backgroundIsDark(answer string) (dark, ok bool) {
	m := oscBackground.FindStringSubmatch(answer)
	if m == nil {
		return false, false
	}
	var lo, hi float64 = 1, 0
	for _, hex := range m[1:] {
		v, err := strconv.ParseUint(hex, 16, 16)
		if err != nil {
			return false, false
		}
		c := float64(v) / float64(uint64(1)<<(4*len(hex))-1)
		lo, hi = min(lo, c), max(hi, c)
	}
	return (lo+hi)/2 < 0.5, true
}
