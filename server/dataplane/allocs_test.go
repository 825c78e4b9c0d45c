package dataplane_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/telemetry"
)

// The request path's allocation budget (issue 33), held by counts rather
// than timings: one in-process chat completion through what gw serve puts
// in front of it (the telemetry middleware with its access log line), the
// key, four policies, rate limits, the metrics and the usage event, to an
// upstream that is an http.RoundTripper answering from memory, so that
// only gw's own work (and the test's fixed share: the request, the
// recorder and the fake answer, measured below as "baseline" and
// subtracted) is counted.
//
// The goal is ≤ 100 allocations per non-streaming request and
// ≤ 150 per streaming request plus ≤ 2 per chunk. The budgets below are
// what the path allocates now, give or take one, lowered with each round
// that cut some (the fifth: 95 and 130 + 0.06 per chunk; the thirteenth:
// 84 and 106 at 20 chunks; the fourteenth: 80 and 101; the sixteenth: 71 and 92;
// docs/performance.md): both goals are met, and
// the test fails the moment the path allocates more (a chunk: one
// allocation where it now makes none). Every
// request here sends the same texts, so the tokenizer's counts come from
// its memo (tokens.countMemo); texts it has not seen cost tiktoken-go's
// regular expressions about four allocations a token more (177 and
// 311 + 5.1 per chunk measured so in the second round).
const (
	nonStreamAllocBudget = 71 // 70 measured; goal 100
	streamAllocBudget    = 93 // 20 chunks, 92 measured; goal 150 + 2×20 = 190
	streamChunkBudget    = 1  // per chunk beyond the first 20; the goal 2
)

// allocAnswer and allocChunks are the fake upstream's answers.
var allocAnswer = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}},"system_fingerprint":"fp_bench"}`)

func allocStream(chunks int) []byte {
	var b bytes.Buffer
	for i := range chunks {
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"tok%d "},"finish_reason":null}]}`+"\n\n", i)
	}
	b.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	fmt.Fprintf(&b, `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", chunks, 19+chunks)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// memUpstream answers every call from memory: the non-streaming answer,
// or the stream when the request asks for one.
type memUpstream struct {
	streams map[int][]byte
	chunks  int
}

func (m *memUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	h := http.Header{}
	answer := allocAnswer
	if bytes.Contains(body, []byte(`"stream":true`)) {
		h["Content-Type"] = []string{"text/event-stream"}
		answer = m.streams[m.chunks]
	} else {
		h["Content-Type"] = []string{"application/json"}
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(bytes.NewReader(answer)),
		ContentLength: int64(len(answer)), Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// allocPath is the in-process path under test: the plane behind the
// middleware, with its token.
type allocPath struct {
	h        http.Handler
	token    string
	upstream *memUpstream
	sink     *countingSink
}

func newAllocPath(t testing.TB) *allocPath {
	t.Helper()
	token, signed, pub, kr := benchBundleWith(t, "http://upstream.test/v1", "",
		&bundle.RateLimits{RequestsPerMinute: 1 << 40, TokensPerMinute: 1 << 50})
	up := &memUpstream{streams: map[int][]byte{20: allocStream(20), 120: allocStream(120)}, chunks: 20}
	sink := &countingSink{}
	// The logger gw serve builds (telemetry.NewLogHandler): its access
	// log line is written from preformatted bytes, as in production.
	log := slog.New(telemetry.NewLogHandler(io.Discard, true, nil))
	metrics := telemetry.NewMetrics("test", "all-in-one")
	plane := dataplane.NewPlane(pub, dataplane.Options{Keyring: kr, Usage: sink, Metrics: metrics, Logger: log,
		Upstreams: providers.NewSet(&http.Client{Transport: up})})
	if err := plane.Admit(signed); err != nil {
		t.Fatal(err)
	}
	plane.MarkReady()
	mw := &telemetry.Middleware{Log: log, Metrics: metrics, APIPrefix: "/api/v1/"}
	return &allocPath{h: mw.Wrap(plane), token: token, upstream: up, sink: sink}
}

const allocMessages = `"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Hello!"}],"temperature":0.7`

var (
	allocBody       = []byte(`{"model":"openai/gpt-4o-mini",` + allocMessages + `}`)
	allocStreamBody = []byte(`{"model":"openai/gpt-4o-mini",` + allocMessages + `,"stream":true,"stream_options":{"include_usage":true}}`)
)

// serveOnce sends one chat completion through h and checks its answer.
func (p *allocPath) serveOnce(t testing.TB, h http.Handler, body []byte, stream bool) {
	r := httptest.NewRequest(http.MethodPost, "/inf/v1/chat/completions", bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+p.token)
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(deadlineRecorder{w}, r)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if stream && !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
		t.Fatalf("stream not relayed whole: %q", w.Body.String())
	}
}

// deadlineRecorder is httptest's recorder with the read and write
// deadlines a server's connection has: the plane sets them through an
// http.ResponseController on every request, and against the bare
// recorder each call allocated an "unsupported" error (4 a request) that
// a served request never does.
type deadlineRecorder struct{ *httptest.ResponseRecorder }

func (deadlineRecorder) SetReadDeadline(time.Time) error  { return nil }
func (deadlineRecorder) SetWriteDeadline(time.Time) error { return nil }

// baseline is the test's own share: the same request and recorder, a
// handler that calls the fake upstream and copies its answer.
func (p *allocPath) baseline() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, "http://upstream.test/v1/chat/completions", bytes.NewReader(in))
		resp, err := p.upstream.RoundTrip(req)
		if err != nil {
			panic(err)
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		_, _ = io.Copy(w, resp.Body)
	})
}

// measure returns the allocations per request of gw's path, the test's
// own share subtracted.
func (p *allocPath) measure(t testing.TB, body []byte, stream bool) (gw, base float64) {
	p.serveOnce(t, p.h, body, stream) // warm: pools, lazily built state
	before := p.sink.n.Load()
	total := testing.AllocsPerRun(200, func() { p.serveOnce(t, p.h, body, stream) })
	if n := p.sink.n.Load() - before; n != 201 {
		t.Fatalf("%d usage events for 201 requests", n)
	}
	bl := p.baseline()
	base = testing.AllocsPerRun(200, func() { p.serveOnce(t, bl, body, stream) })
	return total - base, base
}

func TestRequestPathAllocations(t *testing.T) {
	p := newAllocPath(t)
	t.Run("non-streaming", func(t *testing.T) {
		got, base := p.measure(t, allocBody, false)
		t.Logf("non-streaming: %.0f allocations per request (the test's own %.0f subtracted); goal 100", got, base)
		if got > nonStreamAllocBudget {
			t.Errorf("a non-streaming chat completion allocates %.0f times; the budget is %d (goal 100)", got, nonStreamAllocBudget)
		}
	})
	t.Run("streaming", func(t *testing.T) {
		p.upstream.chunks = 20
		got, base := p.measure(t, allocStreamBody, true)
		p.upstream.chunks = 120
		more, _ := p.measure(t, allocStreamBody, true)
		perChunk := (more - got) / 100
		t.Logf("streaming, 20 chunks: %.0f allocations per request (the test's own %.0f subtracted), %.2f per chunk; goal 150 + 2 per chunk", got, base, perChunk)
		if got > streamAllocBudget {
			t.Errorf("a streaming chat completion of 20 chunks allocates %.0f times; the budget is %d (goal 190)", got, streamAllocBudget)
		}
		if perChunk > streamChunkBudget {
			t.Errorf("a streamed chunk allocates %.2f times; the budget is %d", perChunk, streamChunkBudget)
		}
	})
}

// BenchmarkRequestPath is the same path as a benchmark, for profiles:
//
//	go test -run '^$' -bench RequestPath -benchmem -memprofile mem.out ./server/dataplane
//	go tool pprof -sample_index=alloc_objects -top mem.out
func BenchmarkRequestPath(b *testing.B) {
	p := newAllocPath(b)
	for _, c := range []struct {
		name   string
		body   []byte
		stream bool
	}{{"non-streaming", allocBody, false}, {"streaming-20", allocStreamBody, true}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.serveOnce(b, p.h, c.body, c.stream)
			}
		})
	}
}
