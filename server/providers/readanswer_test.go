package providers

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAnswer reads what io.ReadAll of the body would, whatever the body
// declares: exactly its length, less (an upstream that stops short; the
// transport reports it as an error), more, or nothing; a byte a read; the
// reader's errors; and it refuses an answer over maxAnswerBody.
func TestReadAnswerIsReadAll(t *testing.T) {
	body := bytes.Repeat([]byte(`{"choices":[{"message":{"content":"héllo"}}]}`), 100)
	for _, c := range []struct {
		name     string
		declared int64
		oneByte  bool
	}{
		{"declared", int64(len(body)), false},
		{"declared-one-byte-a-read", int64(len(body)), true},
		{"declared-less", int64(len(body) - 100), false},
		{"declared-more", int64(len(body) + 100), false},
		{"declared-empty", 0, false},
		{"unknown", -1, false},
		{"unknown-one-byte-a-read", -1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(body)
			if c.oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := readAnswer(r, c.declared)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("read %d bytes of %d: %v", len(got), len(body), err)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		if got, err := readAnswer(strings.NewReader(""), 0); err != nil || len(got) != 0 {
			t.Fatalf("%q, %v", got, err)
		}
	})
	t.Run("reader-error", func(t *testing.T) {
		boom := errors.New("connection reset")
		got, err := readAnswer(io.MultiReader(bytes.NewReader(body[:10]), iotest.ErrReader(boom)), int64(len(body)))
		if !errors.Is(err, boom) || !bytes.Equal(got, body[:10]) {
			t.Fatalf("%q, %v", got, err)
		}
	})
	t.Run("declared-over-the-limit", func(t *testing.T) {
		var e *Error
		_, err := readAnswer(iotest.ErrReader(errors.New("read")), maxAnswerBody+1)
		if !errors.As(err, &e) || e.Kind != Unavailable {
			t.Fatalf("%v, want refused unread", err)
		}
	})
	t.Run("over-the-limit", func(t *testing.T) {
		var e *Error
		_, err := readAnswer(io.LimitReader(zeros{}, maxAnswerBody+10), -1)
		if !errors.As(err, &e) || e.Kind != Unavailable {
			t.Fatalf("%v, want refused", err)
		}
		if got, err := readAnswer(io.LimitReader(zeros{}, maxAnswerBody), -1); err != nil || len(got) != maxAnswerBody {
			t.Fatalf("an answer of exactly the limit: %d bytes, %v", len(got), err)
		}
	})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// An answer of declared length is read with one allocation, whatever its
// size; io.ReadAll behind a LimitReader made ten for 4 KB.
func TestReadAnswerAllocatesOnce(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 4096)
	r := bytes.NewReader(body)
	n := testing.AllocsPerRun(100, func() {
		r.Reset(body)
		if got, err := readAnswer(r, int64(len(body))); err != nil || len(got) != len(body) {
			t.Fatal(len(got), err)
		}
	})
	if n != 1 {
		t.Fatalf("%.0f allocations reading a 4 KB answer, want 1", n)
	}
}
