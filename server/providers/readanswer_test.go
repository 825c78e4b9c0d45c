package providers

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// readAnswer reads an answer whole (server/bodyread holds how, for every
// declared length) and refuses one over maxAnswerBody as the upstream's
// failure: unread when its declared length is over, else once read past.
func TestReadAnswer(t *testing.T) {
	body := bytes.Repeat([]byte(`{"choices":[{"message":{"content":"héllo"}}]}`), 100)
	for _, declared := range []int64{int64(len(body)), -1} {
		if got, err := readAnswer(bytes.NewReader(body), declared); err != nil || !bytes.Equal(got, body) {
			t.Fatalf("declared %d: read %d bytes of %d: %v", declared, len(got), len(body), err)
		}
	}
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
