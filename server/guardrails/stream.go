package guardrails

import (
	"context"
	"unicode/utf8"
)

// DefaultHold is the streaming redactor's hold-back window in bytes: the
// tail of an answer kept back until what follows shows whether it starts
// a match. It is longer than the shortest text any built-in rule matches
// (an Anthropic key's is about 110 bytes); a match that reaches the end of
// what has arrived is held from its start however long it grows, and so
// is an unclosed private-key block.
const DefaultHold = 512

// MaxHold bounds what a stream holds back (a private-key block that never
// closes, an answer held whole for a webhook): past it the held text is
// checked and let go as it is.
const MaxHold = 1 << 20

// releaseStep is how far past the window the buffer grows before it is
// checked and let go.
const releaseStep = 256

// Stream checks an answer that arrives in pieces: Write takes a piece and
// returns the text that may be sent now, redacted; Close returns the rest.
// A secret split across pieces is caught because nothing within the
// hold-back window of the end, and nothing that could still be the start
// of a match, is let go before the next piece or the end.
type Stream struct {
	ctx  context.Context
	run  *Run
	hold int
	buf  []byte
	// whole: a guardrail of the run calls a webhook, which must see the
	// answer whole (within MaxHold) before any of it is sent.
	whole bool
	// next is the buffer's length at which it is checked next; checks
	// counts the checks (tests read it).
	next   int
	checks int
}

// NewStream starts a streaming check of a stage through run (normally the
// output stage); hold <= 0 means DefaultHold.
func NewStream(ctx context.Context, run *Run, hold int) *Stream {
	if hold <= 0 {
		hold = DefaultHold
	}
	s := &Stream{ctx: ctx, run: run, hold: hold, next: hold + releaseStep}
	if !run.Empty() {
		for _, g := range run.set {
			for _, d := range g.Spec.Detectors {
				if d.Kind == KindWebhook {
					s.whole = true
				}
			}
		}
	}
	return s
}

// Write adds a piece of the answer. It returns what may be sent now and
// whether the answer is blocked (then nothing more is to be sent, and the
// stream ends with the dialect's error event).
func (s *Stream) Write(piece string) (string, bool) {
	if s.run.Empty() {
		return piece, false
	}
	if s.run.block != nil {
		return "", true
	}
	s.buf = append(s.buf, piece...)
	// The buffer is checked once it has grown a step past the window,
	// not at every piece: a stream of small pieces costs a scan per step.
	if len(s.buf) < s.next {
		return "", false
	}
	s.checks++
	cut := s.cut()
	out, blocked := "", false
	if cut > 0 {
		out, blocked = s.release(cut)
	}
	s.schedule()
	return out, blocked
}

// schedule sets the length of the next check. Normally the window is what
// remains, and the next check is a step on. What a check could not let go
// (a match that reaches the end and may grow, an unclosed private-key
// block, an answer held whole) waits until the held text has about
// doubled: each check scans the whole buffer, so checking a growing hold
// at every step would cost its length squared, and doubling keeps the
// scans of any answer within a few times its length.
func (s *Stream) schedule() {
	n := len(s.buf)
	s.next = min(max(s.hold+releaseStep, n+releaseStep, 2*(n-s.hold)), max(MaxHold, n+1))
}

// Close checks and returns the held rest.
func (s *Stream) Close() (string, bool) {
	if s.run.Empty() {
		return "", false
	}
	if s.run.block != nil {
		return "", true
	}
	if len(s.buf) == 0 {
		return "", false
	}
	return s.release(len(s.buf))
}

// Pending is how many bytes are held back.
func (s *Stream) Pending() int { return len(s.buf) }

func (s *Stream) release(cut int) (string, bool) {
	text := string(s.buf[:cut])
	s.buf = append(s.buf[:0], s.buf[cut:]...)
	out, blocked := s.run.Text(s.ctx, text)
	if blocked {
		s.buf = nil
		return "", true
	}
	return out, false
}

// cut is how much of the buffer may be checked and let go now.
func (s *Stream) cut() int {
	n := len(s.buf)
	if n >= MaxHold {
		return n
	}
	if s.whole {
		return 0
	}
	cut := n - s.hold
	if cut <= 0 {
		return 0
	}
	text := string(s.buf)
	// An unclosed private-key block is held from its header.
	if locs := privateKeyOpen.FindAllStringIndex(text, -1); len(locs) > 0 {
		last := locs[len(locs)-1]
		if !closedAfter(text, last[0]) && last[0] < cut {
			cut = last[0]
		}
	}
	// A match that crosses the cut, or reaches the end (it may grow), is
	// held from its start.
	var ms []Match
	for _, g := range s.run.set {
		for _, fs := range g.finders {
			for _, find := range fs {
				ms = find(text, ms)
			}
		}
	}
	for _, m := range ms {
		if m.Start < cut && (m.End > cut || m.End == n) {
			cut = m.Start
		}
	}
	for cut > 0 && cut < n && !utf8.RuneStart(s.buf[cut]) {
		cut--
	}
	return cut
}

// closedAfter reports whether the private-key block whose header starts
// at from is complete (the whole block matches).
func closedAfter(text string, from int) bool {
	return secretRules[0].re.MatchString(text[from:])
}
