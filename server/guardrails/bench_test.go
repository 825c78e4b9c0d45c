package guardrails

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// prompt is a chat body of about n bytes of ordinary text (no matches),
// in messages of about 1 kB.
func prompt(n int) []byte {
	var msgs []map[string]string
	line := "The quarterly report covers revenue, churn and the roadmap for the next two releases. "
	for size := 0; size < n; {
		text := strings.Repeat(line, 12)
		msgs = append(msgs, map[string]string{"role": "user", "content": text})
		size += len(text) + 30
	}
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	return b
}

// BenchmarkGuardBody: the input stage's cost, three detectors (secrets,
// pii of every type, keywords) over a 4 kB and a 64 kB prompt; ns/op
// against the body passed through with no guardrail (none/…) is the
// ratio the issue asks for.
func BenchmarkGuardBody(b *testing.B) {
	set := mustSet(b, spec(ActionRedact, FailOpen,
		DetectorSpec{Kind: KindSecrets},
		DetectorSpec{Kind: KindPII, Types: PIITypes},
		DetectorSpec{Kind: KindKeywords, Words: []string{"falcon", "project x", "codename"}}))
	for _, size := range []struct {
		name string
		n    int
	}{{"4kB", 4 << 10}, {"64kB", 64 << 10}} {
		body := prompt(size.n)
		b.Run("none/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for range b.N {
				GuardBody(context.Background(), NewRun(nil, StageInput, nil), body)
			}
		})
		b.Run("three/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for range b.N {
				GuardBody(context.Background(), NewRun(set, StageInput, nil), body)
			}
		})
		text := strings.Repeat("The quarterly report covers revenue, churn and the roadmap. ", size.n/60)
		b.Run("stream/"+size.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for range b.N {
				st := NewStream(context.Background(), NewRun(set, StageOutput, nil), 0)
				for i := 0; i < len(text); i += 16 {
					st.Write(text[i:min(i+16, len(text))])
				}
				st.Close()
			}
		})
	}
}
