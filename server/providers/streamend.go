package providers

import (
	"io"
	"sync"
	"time"
)

// streamEnd is what a stream's Close needs to know of how it ended: whether
// Recv returned io.EOF, the protocol's own end ([DONE], message_stop, …),
// with no error before it.
type streamEnd struct{ failed, ended bool }

// note records Recv's result and returns it.
func (e *streamEnd) note(b []byte, err error) ([]byte, error) {
	switch {
	case err == io.EOF:
		e.ended = !e.failed
	case err != nil:
		e.failed = true
	}
	return b, err
}

// streamDrainWait and streamDrainMax bound what closing an ended stream
// reads of its body.
const (
	streamDrainWait = 50 * time.Millisecond
	streamDrainMax  = 4 << 10
)

// closeStream closes an upstream stream's body. net/http puts a connection
// back in its pool only when its response body was read to its end; closed
// before that, the connection is closed, and the next call to the upstream
// dials (and over TLS shakes hands) again. A stream that ended as its
// protocol ends has read its last event, but the body's own end (HTTP/1.1's
// last chunk, HTTP/2's end of stream) is written after it, often in a
// packet of its own: closed at once, a stream lost its connection whenever
// that packet had not yet come (under the harness's streaming load often
// enough that dialling cost 2–3 µs a streamed request; issue 33, fifteenth
// round). So an ended stream's body is read to its end first,
// waiting at most streamDrainWait for at most streamDrainMax bytes (an
// upstream that keeps its body open after the last event, or goes on
// writing, costs that wait once, and its connection, as before). A stream
// that did not end so (an error, a caller gone) is closed at once.
func closeStream(body io.ReadCloser, e streamEnd) error {
	if e.ended {
		drainBody(body)
	}
	return body.Close()
}

// drainer reads an ended stream's body to its end, the timer closing the
// body should the read wait past streamDrainWait. Drainers are pooled, so
// a stream's close allocates nothing: a timer and a buffer of its own
// were three allocations a stream (TestRequestPathAllocations).
type drainer struct {
	mu   sync.Mutex
	body io.ReadCloser // the body the timer closes; nil between drains
	t    *time.Timer
	buf  [512]byte
}

var drainers = sync.Pool{New: func() any {
	d := &drainer{}
	d.t = time.AfterFunc(time.Hour, d.fire)
	d.t.Stop()
	return d
}}

func (d *drainer) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.body != nil {
		_ = d.body.Close()
	}
}

func drainBody(body io.ReadCloser) {
	d := drainers.Get().(*drainer)
	d.mu.Lock()
	d.body = body
	d.mu.Unlock()
	d.t.Reset(streamDrainWait)
	for n := 0; n < streamDrainMax; {
		k, err := body.Read(d.buf[:])
		if err != nil {
			break
		}
		n += k
	}
	stopped := d.t.Stop()
	d.mu.Lock()
	d.body = nil
	d.mu.Unlock()
	if stopped {
		// A timer that fired, or is firing, may yet call fire: that
		// drainer is not used again, lest it close another stream's body.
		drainers.Put(d)
	}
}
