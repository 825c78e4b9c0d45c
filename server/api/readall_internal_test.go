package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// readAll reads a body whole (server/bodyread holds how, for every
// declared length) and returns the route's MaxBytesReader error, which
// readBody maps to 413, for a body over the limit.
func TestReadAllKeepsTheRoutesLimit(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	if got, err := readAll(bytes.NewReader(body), int64(len(body))); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("%d bytes read of %d, %v", len(got), len(body), err)
	}
	// Over the limit: the MaxBytesReader's error, which readBody maps to
	// 413.
	rec := httptest.NewRecorder()
	limited := http.MaxBytesReader(rec, io.NopCloser(bytes.NewReader(make([]byte, 100))), 10)
	var mbe *http.MaxBytesError
	if _, err := readAll(limited, 100); !errors.As(err, &mbe) {
		t.Fatalf("a body over the limit read as %v, want *http.MaxBytesError", err)
	}
}
