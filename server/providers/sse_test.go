package providers

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// An event's lines longer than the read buffer, and events cut across
// its reads, come out whole; ready says only what is buffered.
func TestSSEReaderAcrossItsBuffer(t *testing.T) {
	long := strings.Repeat("x", 3*sseBuffer+17)
	small := `{"choices":[]}`
	stream := "event: a\ndata: " + long + "\n\n: comment\ndata: " + small + "\r\ndata: second line\n\n" +
		strings.Repeat("data: "+small+"\n\n", 400)
	s := newSSEReader(iotestHalf{strings.NewReader(stream)})
	ev, data, err := s.next()
	if err != nil || ev != "a" || string(data) != long {
		t.Fatalf("first event: %q, %d bytes, %v", ev, len(data), err)
	}
	_, data, err = s.next()
	if err != nil || string(data) != small+"\nsecond line" {
		t.Fatalf("second event: %q, %v", data, err)
	}
	for i := 0; i < 400; i++ {
		if _, data, err = s.next(); err != nil || string(data) != small {
			t.Fatalf("event %d: %q, %v", i, data, err)
		}
	}
	if _, _, err = s.next(); err != io.EOF {
		t.Fatalf("after the last event: %v", err)
	}

	// A whole small event buffered is ready; half of one is not.
	r := newSSEReader(bytes.NewReader([]byte("data: " + small + "\n\ndata: {\"cut")))
	if _, _, err := r.next(); err != nil {
		t.Fatal(err)
	}
	if r.ready() {
		t.Error("half an event reads as ready")
	}
}

// ready counts only the events next returns: a comment, a keep-alive or
// an event without data, which next skips and then reads past, is not an
// event at hand.
func TestSSEReaderReady(t *testing.T) {
	for _, tc := range []struct {
		rest  string // buffered after the first event
		ready bool
	}{
		{"", false},
		{"data: {}\n\n", true},
		{"data: {}\r\n\r\n", true},
		{"data\n\n", true},
		{"event: ping\ndata: {}\n\n", true},
		{": keep-alive\n\n", false},
		{": keep-alive\n\ndata: {}\n\n", true},
		{": keep-alive\n\ndata: {}\n", false},
		{"event: ping\n\n", false},
		{"data: {}\n", false},
		{"data: {\"cut", false},
		{"datum: {}\n\n", false},
		{"\n\n\n", false},
	} {
		r := newSSEReader(strings.NewReader("data: first\n\n" + tc.rest))
		if _, _, err := r.next(); err != nil {
			t.Fatal(err)
		}
		if got := r.ready(); got != tc.ready {
			t.Errorf("ready with %q buffered = %v, want %v", tc.rest, got, tc.ready)
		}
		if tc.ready {
			// next must indeed return an event without reading further.
			if _, _, err := r.next(); err != nil {
				t.Errorf("%q: ready, but next: %v", tc.rest, err)
			}
		}
	}
}

// iotestHalf reads at most half of what is asked (and at least one
// byte), so reads end in the middle of lines.
type iotestHalf struct{ r io.Reader }

func (h iotestHalf) Read(p []byte) (int, error) {
	return h.r.Read(p[:max(1, len(p)/2)])
}

// errWouldWait stands for an upstream with nothing more to send yet.
var errWouldWait = errors.New("would wait on the upstream")

// onceReader gives its bytes in one read, then errWouldWait.
type onceReader struct{ b []byte }

func (o *onceReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, errWouldWait
	}
	n := copy(p, o.b)
	o.b = o.b[n:]
	return n, nil
}

// Whatever is buffered, ready never says an event is at hand when next
// would have to wait on the upstream for it.
func FuzzSSEReaderReady(f *testing.F) {
	for _, s := range []string{"data: {}\n\n", ": keep-alive\n\n", "event: ping\n\n", "data: a\r\n\r\ndata: b\n", "\n\ndata\n\n",
		"data: x\n\n: c\n\n", "id: 1\ndata: {}\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, rest []byte) {
		if len(rest) > sseBuffer-64 {
			return // one read must buffer it all
		}
		r := newSSEReader(&onceReader{b: append([]byte("data: first\n\n"), rest...)})
		if _, _, err := r.next(); err != nil {
			t.Fatal(err)
		}
		for r.ready() {
			if _, _, err := r.next(); err != nil {
				t.Fatalf("%q: ready, but next: %v", rest, err)
			}
		}
	})
}
