package bodyread

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Read reads what io.ReadAll reads, whatever length is declared: the
// length, less, more, none, unknown; in one piece or a byte at a time;
// past what it allocates ahead; and its errors are the reader's.
func TestReadIsReadAll(t *testing.T) {
	const ahead = 4096
	for _, n := range []int{0, 1, 511, 512, 513, ahead - 1, ahead, ahead + 3, 3*ahead + 1} {
		body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		for _, declared := range []int64{-1, 0, int64(n), int64(n) / 2, int64(n) + 1, int64(n) * 2} {
			for _, slow := range []bool{false, true} {
				for _, limit := range []int{0, n} {
					if limit > 0 && declared > int64(limit) {
						continue // refused unread (TestReadLimit)
					}
					var r io.Reader = bytes.NewReader(body)
					if slow {
						r = iotest.OneByteReader(r)
					}
					got, err := Read(r, declared, ahead, limit)
					if err != nil || !bytes.Equal(got, body) {
						t.Fatalf("%d bytes declared as %d (one byte a read: %v, limit %d): %d bytes read, %v", n, declared, slow, limit, len(got), err)
					}
				}
			}
		}
	}
	boom := errors.New("connection reset")
	got, err := Read(io.MultiReader(strings.NewReader("{}"), iotest.ErrReader(boom)), 100, ahead, 0)
	if !errors.Is(err, boom) || string(got) != "{}" {
		t.Fatalf("a broken body read as %q, %v; want the bytes before and the reader's error", got, err)
	}
}

// A body over the limit is refused: unread when its declared length says
// so, else once a byte past the limit is read; a body of exactly the limit
// is read.
func TestReadLimit(t *testing.T) {
	const limit = 10_000
	if _, err := Read(iotest.ErrReader(errors.New("read")), limit+1, 1<<20, limit); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("declared over the limit: %v, want refused unread", err)
	}
	for _, declared := range []int64{-1, 100} {
		if _, err := Read(io.LimitReader(zeros{}, limit+10), declared, 1<<20, limit); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("declared %d, sent over the limit: %v, want refused", declared, err)
		}
		if got, err := Read(io.LimitReader(zeros{}, limit), declared, 1<<20, limit); err != nil || len(got) != limit {
			t.Fatalf("declared %d, sent exactly the limit: %d bytes, %v", declared, len(got), err)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A body of its declared length is read with one allocation, whatever its
// size (io.ReadAll behind a LimitReader made ten for 4 KB).
func TestReadAllocatesOnce(t *testing.T) {
	for _, n := range []int{4096, 1 << 20} {
		body := bytes.Repeat([]byte("x"), n)
		r := bytes.NewReader(body)
		got := testing.AllocsPerRun(20, func() {
			r.Reset(body)
			if b, err := Read(r, int64(n), 4<<20, 0); err != nil || len(b) != n {
				t.Fatal(len(b), err)
			}
		})
		if got != 1 {
			t.Errorf("reading %d bytes of their declared length allocates %.0f times, want 1", n, got)
		}
	}
}
