package providers

import (
	"bytes"
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

// iotestHalf reads at most half of what is asked (and at least one
// byte), so reads end in the middle of lines.
type iotestHalf struct{ r io.Reader }

func (h iotestHalf) Read(p []byte) (int, error) {
	return h.r.Read(p[:max(1, len(p)/2)])
}
