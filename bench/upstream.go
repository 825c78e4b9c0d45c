package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// upstream is a fake OpenAI Chat Completions server. The path says how it
// paces its answer: /v1/chat/completions answers at once,
// /p{ms}/v1/chat/completions waits ms milliseconds before the first byte,
// so gw can be pointed at a paced upstream through a credential's base URL
// while the proxy is pointed at it by path. A streamed answer is `chunks`
// content chunks, a finish chunk, a usage chunk when asked for, and [DONE],
// each written and flushed on its own as a model server does.
type upstream struct {
	chunks int
}

var (
	nonStreamAnswer = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0}},"system_fingerprint":"fp_bench"}`)
	chunkEvent = []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_bench",` +
		`"choices":[{"index":0,"delta":{"content":"token "},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	finishEvent = []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_bench",` +
		`"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n")
	usageEvent = []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini","system_fingerprint":"fp_bench",` +
		`"choices":[],"usage":{"prompt_tokens":19,"completion_tokens":20,"total_tokens":39}}` + "\n\n")
	doneEvent = []byte("data: [DONE]\n\n")
)

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (u upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/p") {
		rest := path[2:]
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			http.NotFound(w, r)
			return
		}
		ms, err := strconv.Atoi(rest[:i])
		if err != nil {
			http.NotFound(w, r)
			return
		}
		path = rest[i:]
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	if path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	_, _ = io.Copy(buf, r.Body)
	body := buf.Bytes()
	stream := bytes.Contains(body, []byte(`"stream":true`))
	usage := bytes.Contains(body, []byte(`"include_usage":true`))
	bodyPool.Put(buf)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(nonStreamAnswer)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	send := func(ev []byte) {
		_, _ = w.Write(ev)
		_ = rc.Flush()
	}
	for range u.chunks {
		send(chunkEvent)
	}
	send(finishEvent)
	if usage {
		send(usageEvent)
	}
	send(doneEvent)
}

// bufferPool lends the proxy its copy buffers, as a production Go proxy
// would, so the baseline does not pay an allocation per request.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v := b.p.Get(); v != nil {
		return *(v.(*[]byte))
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// newProxy is the baseline: a bare httputil.ReverseProxy that forwards
// bytes to target and does nothing else. It flushes streamed answers as it
// reads them (ReverseProxy does so for text/event-stream).
//
// It serves each request full duplex. Otherwise net/http's server, at the
// answer's first write, reads away whatever of the request body it thinks
// unread, while the transport's write loop may still be reading that body
// to its end after sending it: the loop's read then fails, and the
// transport closes the upstream connection under the answer being copied
// ("use of closed network connection", the caller's stream cut short). That
// broke 7 to 22 of 30,000 to 60,000 streamed requests a run; gw reads a
// request's body whole before calling the upstream, and never did.
func newProxy(target string) (http.Handler, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.BufferPool = &bufferPool{}
	p.Transport = &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		p.ServeHTTP(w, r)
	}), nil
}
