package providers

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeScalars holds memberDecoder.decode's scalar fast paths to
// json.Unmarshal: the same value, and an error exactly when it errs.
func FuzzDecodeScalars(f *testing.F) {
	for _, raw := range []string{`"openai/gpt-4o-mini"`, `""`, `"a\"b"`, `"é"`, "\"\xff\"", `"a"b"`, `"tab	"`, `"ünïcode"`, "\"\x7f\"", `true`, `false`,
		`null`, `1`, `"true"`, ` true`, `"x" `, `"`, `tru`} {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var d memberDecoder
		var s, ws string
		err, werr := d.decode("p", json.RawMessage(raw), &s), json.Unmarshal([]byte(raw), &ws)
		if (err == nil) != (werr == nil) || err == nil && s != ws {
			t.Fatalf("%q as a string: %q, %v; json.Unmarshal %q, %v", raw, s, err, ws, werr)
		}
		var b, wb bool
		err, werr = d.decode("p", json.RawMessage(raw), &b), json.Unmarshal([]byte(raw), &wb)
		if (err == nil) != (werr == nil) || err == nil && b != wb {
			t.Fatalf("%q as a bool: %v, %v; json.Unmarshal %v, %v", raw, b, err, wb, werr)
		}
	})
}

// BenchmarkDecodeModel compares a request's model read by the fast path
// with json.Unmarshal, in the same run.
func BenchmarkDecodeModel(b *testing.B) {
	raw := json.RawMessage(`"openai/gpt-4o-mini"`)
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s string
			_ = json.Unmarshal(raw, &s)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		var d memberDecoder
		for b.Loop() {
			var s string
			_ = d.decode("model", raw, &s)
		}
	})
}

// TestStreamOptionsAsSent: the forms the SDKs send, read as they are,
// mean what any other spelling of them does.
func TestStreamOptionsAsSent(t *testing.T) {
	for _, c := range []struct {
		opts string
		want bool
	}{{`{"include_usage":true}`, true}, {`{"include_usage":false}`, false}, {`{ "include_usage" : true }`, true},
		{`{"include_usage":false,"x":1}`, false}, {`{"Include_Usage":true}`, true}, {`{}`, false}, {`null`, false}} {
		r, err := ParseChatRequest([]byte(`{"model":"m","stream":true,"stream_options":` + c.opts + `,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatalf("%s: %v", c.opts, err)
		}
		if r.IncludeUsage != c.want || !r.Stream {
			t.Errorf("%s: include usage %v, stream %v", c.opts, r.IncludeUsage, r.Stream)
		}
	}
	if _, err := ParseChatRequest([]byte(`{"model":"m","stream_options":{"include_usage":1},"messages":[]}`)); err == nil {
		t.Error("include_usage 1 accepted")
	}
}
