package dataplane

import (
	"errors"
	"net/http"
)

// eventStream writes a chat completion stream the way OpenAI does:
// "data: {chunk}\n\n" per chunk, "data: [DONE]\n\n" at the end, each
// flushed at once so tokens reach the caller as they arrive.
type eventStream struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
}

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
	return &eventStream{w: w, rc: http.NewResponseController(w)}
}

// data sends one event; the payload is compact JSON, which has no newline
// to break the event apart.
func (s *eventStream) data(payload []byte) error {
	s.buf = append(append(append(s.buf[:0], "data: "...), payload...), "\n\n"...)
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	return s.flush()
}

// done ends the stream.
func (s *eventStream) done() error {
	if _, err := s.w.Write(doneEvent); err != nil {
		return err
	}
	return s.flush()
}

func (s *eventStream) flush() error {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
