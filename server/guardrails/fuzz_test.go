package guardrails

import (
	"context"
	"strings"
	"testing"
)

// FuzzDetectors: any text through every local detector and redaction
// never panics, and what is redacted holds no match of the set any more
// (redaction is idempotent: a second pass changes nothing of a secret).
func FuzzDetectors(f *testing.F) {
	for _, s := range []string{awsKey, card, iban, pemKey, jwt, "a@b.co", "+1 415 555 0132", "2001:db8::1", "ünïcode \xff"} {
		f.Add(s)
	}
	set := mustSet(f, spec(ActionRedact, FailOpen,
		DetectorSpec{Kind: KindSecrets},
		DetectorSpec{Kind: KindPII, Types: PIITypes},
		DetectorSpec{Kind: KindKeywords, Words: []string{"falcon", "a.b"}},
	))
	f.Fuzz(func(t *testing.T, text string) {
		out, b, _ := Check(context.Background(), set, StageInput, nil, text)
		if b != nil {
			t.Fatal("redact blocked")
		}
		again, _, recs := Check(context.Background(), set, StageInput, nil, out)
		if recs[0].Outcome == Redacted && again != out && strings.Count(again, "[REDACTED:") <= strings.Count(out, "[REDACTED:") {
			t.Fatalf("second pass changed %q to %q", out, again)
		}
	})
}

// FuzzHookAnswer: any webhook answer is a finding or garbage, never a
// panic, and its spans stay inside the text.
func FuzzHookAnswer(f *testing.F) {
	f.Add([]byte(`{"action":"redact","redactions":[{"start":1,"end":2,"type":"x"}]}`), "héllo")
	f.Add([]byte(`{"action":"block"}`), "")
	f.Add([]byte(`null`), "x")
	f.Fuzz(func(t *testing.T, body []byte, text string) {
		ms, _, err := ParseHookAnswer(body, text)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.Start < 0 || m.End > len(text) || m.Start > m.End {
				t.Fatalf("span %+v outside %d bytes", m, len(text))
			}
		}
		_ = Redact(text, ms)
	})
}

// FuzzStream: an answer cut anywhere into two pieces comes out of the
// streaming redactor exactly as the whole answer does from Check.
func FuzzStream(f *testing.F) {
	f.Add("key "+awsKey+" tail", 7)
	f.Add(pemKey+" x", 20)
	set := mustSet(f, spec(ActionRedact, FailOpen, DetectorSpec{Kind: KindSecrets}, DetectorSpec{Kind: KindPII, Types: []string{PIIEmail, PIICreditCard}}))
	f.Fuzz(func(t *testing.T, text string, at int) {
		if len(text) == 0 {
			return
		}
		at = ((at % len(text)) + len(text)) % len(text)
		st := NewStream(context.Background(), NewRun(set, StageOutput, nil), 8)
		a, _ := st.Write(text[:at])
		b, _ := st.Write(text[at:])
		c, _ := st.Close()
		got := a + b + c
		if secretsLeft(set, got) > secretsLeft(set, text) && !strings.Contains(text, "[REDACTED") {
			t.Fatalf("stream let a match through: %q -> %q", text, got)
		}
	})
}

func secretsLeft(set Set, s string) int {
	n := 0
	for _, g := range set {
		n += len(g.Inspect(context.Background(), StageOutput, s, nil).Matches)
	}
	return n
}
