package tokens

import (
	"strings"
	"testing"
	"unsafe"
)

// The memo returns the tokenizer's own count, keeps its own copy of the
// text (the caller's bytes may change after), forgets everything when
// full, and never keeps a text past memoText.
func TestCountMemo(t *testing.T) {
	b := &bpe{raw: o200k.raw, split: o200k.split}
	buf := []byte("You are a helpful assistant. Answer in French.")
	text := string(buf)
	// Counted as the floor scan counts: a string over the caller's bytes,
	// which change afterwards.
	want := b.Count(unsafe.String(unsafe.SliceData(buf), len(buf)))
	buf[0] = 'Z'

	if want <= 0 {
		t.Fatalf("count %d", want)
	}
	if n, ok := b.memo.get(text); !ok || n != want {
		t.Fatalf("memo after one count: %d, %v; want %d", n, ok, want)
	}
	if got := b.Count(text); got != want {
		t.Fatalf("remembered count %d, counted %d", got, want)
	}
	other := "x y z"
	if got, fresh := b.Count(other), (&bpe{raw: o200k.raw, split: o200k.split}).Count(other); got != fresh {
		t.Fatalf("count %d, a fresh counter's %d", got, fresh)
	}

	long := strings.Repeat("word ", memoText/5+1)
	b.Count(long)
	if _, ok := b.memo.get(long); ok {
		t.Errorf("a text of %d bytes was remembered (limit %d)", len(long), memoText)
	}

	b.memo.bytes = memoBytes // full: the next new text starts the memo again
	b.Count("a new text")
	if _, ok := b.memo.get(text); ok {
		t.Error("a full memo kept its texts")
	}
	if n, ok := b.memo.get("a new text"); !ok || n <= 0 || b.memo.bytes != len("a new text") {
		t.Errorf("after a reset: %d, %v, %d bytes", n, ok, b.memo.bytes)
	}
}
