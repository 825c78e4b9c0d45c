package providers

import (
	"bytes"
	"encoding/json"
	"testing"
)

// answerCases are answers whose encoding is easy to get wrong: spacing,
// duplicate and escaped names, names sorting around "model", characters
// json.Marshal escapes, and values that are not objects.
var answerCases = []string{
	`{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":3}}}`,
	"{ \"z\" : 1 ,\n\t\"a\" : [ 1 , 2 , { \"b\" : \"x y\" } ] , \"usage\" : { \"prompt_tokens\" : 5 } }\n",
	`{"model":"a","model":"b","usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}`,
	`{"service_tier":"default","usage":{},"service_tier":"priority"}`, `{"service_tier":null}`, `{"service_tier":"flex"}`,
	`{"a":1,"a!":2,"a ":3,"mode":4,"model ":5,"modelx":6,"mod":7,"M":8}`,
	`{}`, `{"usage":null}`, `{"model":null}`,
	`{"content":"<b>&amp;</b>","x":"\u2028\u2029","raw":"` + "\u2028 \u2029 \xe2\x80" + `"}`,
	`{"k\u0065y":1,"model":2}`, `{"<":1}`, `{"ключ":1}`, `{"a\"b":1}`, `{"bad":"` + "\xff" + `"}`, `{"` + "\xff" + `":1}`,
	`{"n":1e400,"f":-0.0,"e":1E+2}`, `{"s":"\ud800"}`,
	`null`, `[]`, `"x"`, `1`, `{"a":1`, `{"a":1}x`, `{"a":1} {"b":2}`, ``, ` `, `{"a":}`, `{,}`, `{"a":1,}`,
}

func checkRewriteAnswer(t *testing.T, raw []byte) {
	t.Helper()
	for _, model := range []string{"openai/gpt-4o-mini", "a<b>&c", "\u2028"} {
		mv := jsonString(model)
		want, wantUsage, wantTier, wantErr := rewriteAnswerMap(raw, mv)
		got, gotUsage, gotTier, gotErr := rewriteAnswer(raw, mv)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%q: error %v, map's way %v", raw, gotErr, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", raw, got, want)
		}
		if (wantUsage == nil) != (gotUsage == nil) || decodeOpenAIUsage(gotUsage) != decodeOpenAIUsage(wantUsage) {
			t.Fatalf("%q: usage %s, map's way %s", raw, gotUsage, wantUsage)
		}
		if (wantTier == nil) != (gotTier == nil) || ServiceTierName(gotTier) != ServiceTierName(wantTier) {
			t.Fatalf("%q: service tier %s, map's way %s", raw, gotTier, wantTier)
		}
	}
}

// TestRewriteAnswerMatchesMap holds rewriteAnswer to the bytes, usage and
// refusals of a decode into a map and json.Marshal.
func TestRewriteAnswerMatchesMap(t *testing.T) {
	for _, c := range answerCases {
		checkRewriteAnswer(t, []byte(c))
	}
}

func FuzzRewriteAnswer(f *testing.F) {
	for _, c := range answerCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkRewriteAnswer(t, raw)
		if json.Valid(raw) {
			// Also as the inside of an answer, so that the fuzzer's
			// valid values exercise the member walk.
			checkRewriteAnswer(t, append(append([]byte(`{"x":`), raw...), `,"model":"m"}`...))
		}
	})
}

// BenchmarkRewriteAnswer compares the member walk with the map's way it
// replaced, in the same run, on a typical non-streamed answer.
func BenchmarkRewriteAnswer(b *testing.B) {
	raw := []byte(answerCases[0])
	model := jsonString("openai/gpt-4o-mini")
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _, _ = rewriteAnswerMap(raw, model)
		}
	})
	b.Run("walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _, _ = rewriteAnswer(raw, model)
		}
	})
}
