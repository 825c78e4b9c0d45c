package providers

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestModelIDJSON holds the model ids the data plane makes once to
// json.Marshal's encoding, clipped so no append writes into them, and
// modelJSON to the made copy when there is one.
func TestModelIDJSON(t *testing.T) {
	for _, id := range []string{"openai/gpt-4o-mini", "gpt-4o-2024-08-06", `a "quoted" <id>`, "é"} {
		want, _ := json.Marshal(id)
		got := ModelIDJSON(id)
		if !bytes.Equal(got, want) {
			t.Errorf("%q: %s, want %s", id, got, want)
		}
		if cap(got) != len(got) {
			t.Errorf("%q: capacity %d beyond its length %d", id, cap(got), len(got))
		}
		if m := modelJSON(nil, id); !bytes.Equal(m, want) {
			t.Errorf("%q made now: %s, want %s", id, m, want)
		}
		if m := modelJSON(got, "other"); &m[0] != &got[0] {
			t.Errorf("%q: the made copy not used", id)
		}
	}
}
