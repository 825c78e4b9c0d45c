package dataplane

import (
	"errors"
	"net/http"
	"sync"
)

// eventStream writes a chat completion stream the way OpenAI does:
// "data: {chunk}\n\n" per chunk, "data: [DONE]\n\n" at the end, flushed
// as soon as no further chunk is already at hand, so tokens reach the
// caller as they arrive.
type eventStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
	// pooled is the eventBufs entry buf came from, until last gives it
	// back.
	pooled *[]byte
}

// eventBufs are the event streams' buffers, kept from one stream to the
// next: a buffer grows to what an upstream delivers together (a fast
// upstream's whole short answer: 12 KiB of growth a stream, the streaming
// path's largest allocation; issue 33). A buffer grown past
// maxPooledEventBuf is left to the collector.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

const maxPooledEventBuf = 64 << 10

var (
	contentTypeEventStream = []string{"text/event-stream; charset=utf-8"}
	// Reverse proxies (nginx) buffer responses unless told otherwise.
	noBuffering = []string{"no"}
	doneEvent   = []byte("data: [DONE]\n\n")
)

// startEventStream sends the stream's headers.
func startEventStream(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h["Content-Type"] = contentTypeEventStream
	h["Cache-Control"] = noStore
	h["X-Accel-Buffering"] = noBuffering
	w.WriteHeader(http.StatusOK)
	// A new buffer starts at a few events' size, so that it grows once
	// per stream at most, not over its first events.
	pooled := eventBufs.Get().(*[]byte)
	return &eventStream{w: w, rc: http.NewResponseController(w), buf: (*pooled)[:0], pooled: pooled}
}

// add queues one event; the payload is compact JSON, which has no
// newline to break the event apart.
func (s *eventStream) add(payload []byte) {
	s.buf = append(append(append(s.buf, "data: "...), payload...), "\n\n"...)
}

// send writes and flushes what is queued, in one write: the events an
// upstream delivered together reach the caller together, at the cost of
// one write and one flush instead of one per event.
func (s *eventStream) send() error {
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	if err != nil {
		return err
	}
	return s.flush()
}

// data sends one event, with any queued before it.
func (s *eventStream) data(payload []byte) error {
	s.add(payload)
	return s.send()
}

// done ends the stream, with any events queued before the end: written,
// not flushed. The handler returns right after the end (its metering is
// done before it), and net/http then writes what is buffered together
// with the chunked body's terminator: one write(2) and one segment where
// a flush here made two, the second five bytes long.
func (s *eventStream) done() error {
	s.buf = append(s.buf, doneEvent...)
	return s.last()
}

// last writes what is queued without a flush: the stream's end, which
// net/http sends with the chunked terminator once the handler returns.
// The buffer goes back to eventBufs (every writer copies what it is
// given); an event queued after the end (a cost comment) takes a new one.
func (s *eventStream) last() error {
	var err error
	if len(s.buf) > 0 {
		_, err = s.w.Write(s.buf)
	}
	if s.pooled != nil && cap(s.buf) <= maxPooledEventBuf {
		*s.pooled = s.buf[:0]
		eventBufs.Put(s.pooled)
	}
	s.buf, s.pooled = nil, nil
	return err
}

func (s *eventStream) flush() error {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
