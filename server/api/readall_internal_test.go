package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/iotest"
)

// readAll reads what io.ReadAll reads, whatever length is declared: the
// length, less, more, none; in one piece or a byte at a time; and its
// errors are the reader's.
func TestReadAllIsIOReadAll(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 4096, 1 << 20, maxBodyAhead + 3} {
		body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		for _, declared := range []int64{-1, 0, int64(n), int64(n) / 2, int64(n) + 1, int64(n) * 2} {
			for _, slow := range []bool{false, true} {
				var r io.Reader = bytes.NewReader(body)
				if slow {
					r = iotest.OneByteReader(r)
				}
				got, err := readAll(r, declared)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("%d bytes declared as %d (one byte a read: %v): %d bytes read, %v", n, declared, slow, len(got), err)
				}
			}
		}
	}
	failing := errors.New("the connection broke")
	if _, err := readAll(io.MultiReader(bytes.NewReader([]byte("{}")), iotest.ErrReader(failing)), 100); !errors.Is(err, failing) {
		t.Fatalf("a broken body read as %v, want the reader's error", err)
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

// A body of its declared length is read into one allocation, not grown to
// it (io.ReadAll's way: 512 bytes, then doubling and copying).
func TestReadAllAllocatesOnce(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 1<<20)
	r := bytes.NewReader(body)
	got := testing.AllocsPerRun(20, func() {
		r.Reset(body)
		if b, err := readAll(r, int64(len(body))); err != nil || len(b) != len(body) {
			t.Fatal(len(b), err)
		}
	})
	if got > 2 { // the buffer, and the bytes.Buffer that holds it
		t.Errorf("reading a 1 MiB body of its declared length allocates %.0f times", got)
	}
}
