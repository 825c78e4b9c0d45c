package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/providers/providerstest"
)

const secret = "sk-upstream-secret-0123456789"

func parse(t testing.TB, body string) *providers.ChatRequest {
	t.Helper()
	req, err := providers.ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	return req
}

func call(t testing.TB, base, body string) *providers.Call {
	t.Helper()
	return &providers.Call{Request: parse(t, body), UpstreamModel: "up-model", ResponseModel: "gw/model", BaseURL: base, Secret: secret, DefaultMaxTokens: 1000}
}

func openAI(d providers.Dialect) *providers.OpenAI {
	return &providers.OpenAI{Client: providers.NewHTTPClient(), Dialect: d}
}

// drain reads a stream to its end.
func drain(t *testing.T, s providers.ChunkStream) ([]map[string]any, error) {
	t.Helper()
	defer s.Close()
	var out []map[string]any
	for {
		b, err := s.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("chunk %s: %v", b, err)
		}
		out = append(out, m)
	}
}

func TestOpenAICompletePassesTheRequestThroughWithTheUpstreamModel(t *testing.T) {
	f := providerstest.NewOpenAI(t, secret)
	f.Enqueue(providerstest.Reply{Text: "hi there", Usage: providerstest.Usage{Input: 100, Output: 7, CacheRead: 40}})
	c := call(t, f.BaseURL(), `{"model":"gw/model","messages":[{"role":"user","content":"hi"}],"max_tokens":50,"top_k":3,"temperature":0.2}`)
	got, err := openAI(providers.DialectOpenAI).Complete(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	sent := f.Last(t).Body
	if sent["model"] != "up-model" || sent["max_completion_tokens"] != 50.0 || sent["max_tokens"] != nil ||
		sent["top_k"] != 3.0 || sent["temperature"] != 0.2 {
		t.Fatalf("upstream got %v", sent)
	}
	var out map[string]any
	if err := json.Unmarshal(got.Body, &out); err != nil || out["model"] != "gw/model" || out["object"] != "chat.completion" {
		t.Fatalf("answer %s: %v", got.Body, err)
	}
	// prompt_tokens 140 includes 40 cached; gw's categories are disjoint.
	if want := (providers.Usage{InputTokens: 100, OutputTokens: 7, CacheReadTokens: 40, InputReported: true, OutputReported: true}); got.Usage != want {
		t.Fatalf("usage %+v, want %+v", got.Usage, want)
	}
}

func TestOpenAIDialects(t *testing.T) {
	f := providerstest.NewOpenAI(t, secret)
	body := `{"model":"m","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":"hi"}],"max_completion_tokens":20}`
	for _, tc := range []struct {
		d               providers.Dialect
		limit, notLimit string
		role            string
	}{
		{providers.DialectOpenAI, "max_completion_tokens", "max_tokens", "developer"},
		{providers.DialectCompatible, "max_tokens", "max_completion_tokens", "system"},
	} {
		c := call(t, f.BaseURL(), body)
		c.MaxTokens = 10 // a policy limit wins over the request's
		if _, err := openAI(tc.d).Complete(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		sent := f.Last(t).Body
		role := sent["messages"].([]any)[0].(map[string]any)["role"]
		if sent[tc.limit] != 10.0 || sent[tc.notLimit] != nil || role != tc.role {
			t.Fatalf("dialect %d sent %v", tc.d, sent)
		}
	}
}

func TestGoogleGoesThroughItsOpenAIEndpoint(t *testing.T) {
	var path string
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"gemini-2.5-flash","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
	}))
	c := call(t, srv+"/v1beta", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	got, err := openAI(providers.DialectGoogle).Complete(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if path != "/v1beta/openai/chat/completions" || got.Usage.InputTokens != 3 || got.Usage.OutputTokens != 4 {
		t.Fatalf("path %s, usage %+v", path, got.Usage)
	}
}

func TestOpenAIStreamAsksForUsageAndHidesItFromClientsThatDidNot(t *testing.T) {
	f := providerstest.NewOpenAI(t, secret)
	u := providerstest.Usage{Input: 20, Output: 9}
	for _, asked := range []bool{false, true} {
		f.Enqueue(providerstest.Reply{Text: "streamed words", Usage: u})
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		if asked {
			body = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
		}
		s, err := openAI(providers.DialectOpenAI).Stream(context.Background(), call(t, f.BaseURL(), body))
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := drain(t, s)
		if err != nil {
			t.Fatal(err)
		}
		if opts := f.Last(t).Body["stream_options"].(map[string]any); opts["include_usage"] != true {
			t.Fatalf("stream_options sent: %v", opts)
		}
		var text strings.Builder
		usageChunks := 0
		for _, c := range chunks {
			if c["model"] != "gw/model" {
				t.Fatalf("chunk model %v", c["model"])
			}
			if _, has := c["usage"]; has && !asked {
				t.Fatalf("usage member shown to a client that did not ask: %v", c)
			}
			if c["usage"] != nil {
				usageChunks++
			}
			for _, ch := range c["choices"].([]any) {
				if s, ok := ch.(map[string]any)["delta"].(map[string]any)["content"].(string); ok {
					text.WriteString(s)
				}
			}
		}
		if text.String() != "streamed words" || (usageChunks == 1) != asked {
			t.Fatalf("asked %v: text %q, %d usage chunks", asked, text.String(), usageChunks)
		}
		if want := (providers.Usage{InputTokens: 20, OutputTokens: 9, InputReported: true, OutputReported: true}); s.Usage() != want {
			t.Fatalf("usage %+v", s.Usage())
		}
	}
}

// The stream_options gw sends: the caller's with include_usage set, as
// the map's way encodes it (compact, names sorted), and the constant it
// takes for the common cases is that same encoding.
func TestOpenAIStreamOptionsSent(t *testing.T) {
	f := providerstest.NewOpenAI(t, secret)
	for _, tc := range []struct{ given, sent string }{
		{``, `{"include_usage":true}`},
		{`,"stream_options":null`, `{"include_usage":true}`},
		{`,"stream_options":{"include_usage":true}`, `{"include_usage":true}`},
		{`,"stream_options": { "include_usage" : false } `, `{"include_usage":true}`},
		{`,"stream_options":{}`, `{"include_usage":true}`},
		{`,"stream_options":{"include_usage":false,"include_obfuscation":false}`, `{"include_obfuscation":false,"include_usage":true}`},
		{`,"stream_options":{"include_obfuscation":true}`, `{"include_obfuscation":true,"include_usage":true}`},
	} {
		f.Enqueue(providerstest.Reply{Text: "words"})
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]` + tc.given + `}`
		s, err := openAI(providers.DialectOpenAI).Stream(context.Background(), call(t, f.BaseURL(), body))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := drain(t, s); err != nil {
			t.Fatal(err)
		}
		raw := f.Last(t).Raw
		if !bytes.Contains(raw, []byte(`"stream_options":`+tc.sent)) {
			t.Errorf("%s: sent %s, want stream_options %s", tc.given, raw, tc.sent)
		}
	}
}

// RecvView hands the chunks Recv does, in the stream's own buffer.
func TestOpenAIStreamRecvViewIsRecv(t *testing.T) {
	f := providerstest.NewOpenAI(t, secret)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	read := func(view bool) (chunks []string, buffers int, u providers.Usage) {
		f.Enqueue(providerstest.Reply{Text: "several streamed words, one delta each", Usage: providerstest.Usage{Input: 5, Output: 7}})
		s, err := openAI(providers.DialectOpenAI).Stream(context.Background(), call(t, f.BaseURL(), body))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		seen := map[*byte]bool{}
		for {
			var b []byte
			if view {
				b, err = s.(providers.ViewStream).RecvView()
			} else {
				b, err = s.Recv()
			}
			if err == io.EOF {
				u := s.Usage()
				u.Upstream = nil
				return chunks, len(seen), u
			}
			if err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, string(b))
			seen[unsafe.SliceData(b)] = true
		}
	}
	fresh, n, u := read(false)
	views, m, uv := read(true)
	if !slices.Equal(fresh, views) || len(fresh) < 3 || u != uv || u.InputTokens != 5 {
		t.Fatalf("Recv %q (%+v), RecvView %q (%+v)", fresh, u, views, uv)
	}
	if n != len(fresh) || m >= n {
		t.Fatalf("%d chunks in %d buffers by Recv and %d by RecvView", len(fresh), n, m)
	}
}

func TestOpenAIErrorsAreClassified(t *testing.T) {
	f := providerstest.NewOpenAI(t, secret)
	ctx := context.Background()
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		reply  providerstest.Reply
		kind   providers.ErrorKind
		status int
	}{
		{providerstest.Reply{Status: 429, Message: "slow down", RetryAfter: "7"}, providers.RateLimited, 429},
		{providerstest.Reply{Status: 500, Message: "boom"}, providers.Unavailable, 500},
		{providerstest.Reply{Status: 503, Message: "overloaded"}, providers.Unavailable, 503},
		{providerstest.Reply{Status: 504, Message: "slow"}, providers.Timeout, 504},
		{providerstest.Reply{Status: 400, Message: "bad temperature"}, providers.Rejected, 400},
	} {
		f.Enqueue(tc.reply)
		_, err := openAI(providers.DialectOpenAI).Complete(ctx, call(t, f.BaseURL(), body))
		var e *providers.Error
		if !errors.As(err, &e) || e.Kind != tc.kind || e.Status != tc.status || e.Message != tc.reply.Message {
			t.Fatalf("reply %+v: got %#v", tc.reply, err)
		}
		if tc.status == 429 && e.RetryAfter != "7" {
			t.Fatalf("Retry-After %q", e.RetryAfter)
		}
	}

	// A refused key is echoed by the upstream; the error must not carry it.
	c := call(t, f.BaseURL(), body)
	c.Secret = "sk-wrong-secret-abcdefghijkl"
	_, err := openAI(providers.DialectOpenAI).Complete(ctx, c)
	var e *providers.Error
	if !errors.As(err, &e) || e.Kind != providers.Unauthorized || strings.Contains(err.Error(), c.Secret) {
		t.Fatalf("refused key: %v", err)
	}

	// The call's deadline.
	f.Enqueue(providerstest.Reply{Delay: time.Second})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := openAI(providers.DialectOpenAI).Complete(short, call(t, f.BaseURL(), body)); !errors.As(err, &e) || e.Kind != providers.Timeout {
		t.Fatalf("slow upstream: %v", err)
	}

	// Nobody listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	if _, err := openAI(providers.DialectOpenAI).Complete(ctx, call(t, dead, body)); !errors.As(err, &e) || e.Kind != providers.Unavailable {
		t.Fatalf("connection refused: %v", err)
	}

	// A stream that breaks off with an error event.
	f.Enqueue(providerstest.Reply{Text: "some words", BreakStream: true})
	s, err := openAI(providers.DialectOpenAI).Stream(ctx, call(t, f.BaseURL(), `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, s); !errors.As(err, &e) || e.Kind != providers.Unavailable {
		t.Fatalf("broken stream: %v", err)
	}
}

func newServer(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// Mistral refuses stream_options with a 422 and reports a stream's usage
// unasked, in its last chunk. The adapter retries without the member once,
// remembers, and still reads the usage.
func TestUpstreamsThatRefuseStreamOptions(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		if _, has := body["stream_options"]; has {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","stream_options"],"msg":"Extra inputs are not permitted","input":{"include_usage":true}}]},"type":"invalid_request_error","param":null,"code":null}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"id":"m1","object":"chat.completion.chunk","created":1,"model":"mistral-small","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`+"\n\n")
		_, _ = io.WriteString(w, `data: {"id":"m1","object":"chat.completion.chunk","created":1,"model":"mistral-small","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":8,"total_tokens":10,"completion_tokens":2}}`+"\n\n")
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	a := openAI(providers.DialectCompatible)
	for want := 2; want <= 3; want++ {
		s, err := a.Stream(context.Background(), call(t, srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := drain(t, s)
		if err != nil || len(chunks) != 2 {
			t.Fatalf("%d chunks, %v", len(chunks), err)
		}
		if _, has := chunks[1]["usage"]; has {
			t.Fatal("usage shown to a client that did not ask")
		}
		if got := s.Usage(); got.InputTokens != 8 || got.OutputTokens != 2 {
			t.Fatalf("usage %+v", got)
		}
		mu.Lock()
		n := requests
		mu.Unlock()
		if n != want {
			t.Fatalf("%d upstream requests, want %d", n, want)
		}
	}
}

// A stream is whole once a choice has finished, with [DONE] or without
// it; one that ends before any choice finished is an error. The finish is
// read in the same walk as the deltas' text.
func TestStreamFinishedWithoutDone(t *testing.T) {
	for _, c := range []struct {
		name   string
		finish string
		whole  bool
	}{{"finished", `"stop"`, true}, {"null finish", `null`, false}, {"empty finish", `""`, false}} {
		t.Run(c.name, func(t *testing.T) {
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`+"\n\n")
				_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":`+c.finish+`}]}`+"\n\n")
			}))
			s, err := openAI(providers.DialectOpenAI).Stream(context.Background(), call(t, srv, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := drain(t, s)
			if c.whole && (err != nil || len(chunks) != 2) {
				t.Fatalf("%d chunks, %v; want 2 and the end", len(chunks), err)
			}
			if !c.whole && !errors.Is(err, providers.ErrStreamTruncated) {
				t.Fatalf("%d chunks, %v; want the truncation", len(chunks), err)
			}
		})
	}
}
