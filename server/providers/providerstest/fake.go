// Package providerstest runs fake upstreams for tests: an OpenAI Chat
// Completions server and an Anthropic Messages server on 127.0.0.1, each
// speaking its real wire protocol (JSON answers, SSE streams with usage,
// error bodies), answering from a script of replies and recording what they
// were sent.
package providerstest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Reply is what a fake answers to one request.
type Reply struct {
	// Status, when not 0 or 200, makes the answer an error in the
	// protocol's shape, with Message and RetryAfter.
	Status     int
	Message    string
	RetryAfter string
	// Delay holds the answer back (a slow upstream); the request's
	// cancellation ends the wait.
	Delay time.Duration
	// Text is the assistant's text; a stream sends it in pieces of
	// ChunkSize bytes (4 when 0).
	Text      string
	ChunkSize int
	// Thinking, for the Anthropic fake, is a thinking block before the
	// text (streamed as thinking_deltas in pieces of ChunkSize, then a
	// signature_delta).
	Thinking string
	// ExtraEvents, in a stream, are events sent as they are after the
	// text's deltas (Anthropic: before the text block's stop; Responses:
	// before response.completed; Chat Completions: whole chunks, before
	// the finishing one).
	ExtraEvents []map[string]any
	ToolCalls   []ToolCall
	// Usage is reported in the answer; the cache counts go where the
	// protocol puts them.
	Usage Usage
	// FinishReason is OpenAI's word (stop, length, tool_calls); the
	// Anthropic fake translates it. "stop" when empty, or "tool_calls"
	// with ToolCalls.
	FinishReason string
	// BreakStream, in a stream, sends an error event after the first
	// piece of text instead of finishing.
	BreakStream bool
	// TruncateStream, in a stream, closes the connection after the first
	// piece of text without the protocol's terminal event, as an upstream
	// that dies mid-answer does.
	TruncateStream bool
	// Hold, in a stream, waits after the first piece of text until it is
	// closed (or the caller leaves) before going on: a long answer, kept
	// in flight for as long as a test needs.
	Hold <-chan struct{}
	// NoUsage leaves usage out of the answer (and, in a stream, out of
	// every event), as some servers do.
	NoUsage bool
	// GarbleUsage sends a usage object that does not read (counts as
	// strings).
	GarbleUsage bool
	// GarbleStream, in a stream, sends an event that is not JSON after
	// the first piece of text.
	GarbleStream bool
	// TruncateBody, not streaming, sends a 200 whose JSON answer is cut
	// off halfway, as an upstream that dies mid-answer does.
	TruncateBody bool
	// ResponseID is the Responses fake's response id (resp_fake when
	// empty).
	ResponseID string
	// ServiceTier, when set, is the service_tier the OpenAI fakes' answer
	// names (the answer object, every stream chunk, the response object).
	ServiceTier string
}

// ToolCall is a tool call the assistant makes.
type ToolCall struct {
	ID, Name, Arguments string
}

// Usage is a reply's token counts, in gw's disjoint categories;
// CacheWrite1h is the part of CacheWrite written with a one-hour TTL and
// Reasoning the part of Output spent thinking.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
	CacheWrite1h, Reasoning              int64
}

// garbledUsage is a usage object no reader can take.
var garbledUsage = map[string]any{"prompt_tokens": "many", "completion_tokens": "some", "input_tokens": "many", "output_tokens": "some"}

// Request is what a fake received.
type Request struct {
	Path   string
	Header http.Header
	// Body is the request body decoded into generic JSON values.
	Body map[string]any
	Raw  []byte
}

// fake is the part both fakes share: the script, the record, the server.
type fake struct {
	*httptest.Server
	// Key is the secret the fake accepts.
	Key string

	mu       sync.Mutex
	queue    []Reply
	fallback Reply
	received []Request
	// refusesStreamOptions are the models that answer 400 to a request
	// with stream_options.
	refusesStreamOptions map[string]bool
	// marked are replies by a marker the request's body carries
	// (ReplyWhen).
	marked map[string]Reply
	// batch is the provider's batch API (batchapi.go).
	batch batchAPI
}

// ReplyWhen answers every request whose body contains marker with reply
// (before the queue): tests that run in parallel against one fake each
// mark their requests.
func (f *fake) ReplyWhen(marker string, reply Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.marked == nil {
		f.marked = map[string]Reply{}
	}
	f.marked[marker] = reply
}

// RefuseStreamOptions makes the fake refuse stream_options for model, as
// a server that does not know the member does.
func (f *fake) RefuseStreamOptions(model string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refusesStreamOptions == nil {
		f.refusesStreamOptions = map[string]bool{}
	}
	f.refusesStreamOptions[model] = true
}

func (f *fake) refuses(model string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refusesStreamOptions[model]
}

func newFake(t testing.TB, key string, handler func(f *fake) http.Handler) *fake {
	f := &fake{Key: key, fallback: Reply{Text: "Hello from the fake.", Usage: Usage{Input: 12, Output: 5}}}
	f.Server = httptest.NewServer(handler(f))
	t.Cleanup(f.Server.Close)
	return f
}

// Enqueue adds replies for the next requests, in order; once they are
// used up the default reply answers.
func (f *fake) Enqueue(replies ...Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, replies...)
}

// SetDefault sets the reply given when the queue is empty.
func (f *fake) SetDefault(r Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fallback = r
}

// Requests returns what the fake received so far.
func (f *fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.received...)
}

// Last returns the last request received; it fails the test if there was
// none.
func (f *fake) Last(t testing.TB) Request {
	t.Helper()
	reqs := f.Requests()
	if len(reqs) == 0 {
		t.Fatal("the fake upstream received no request")
	}
	return reqs[len(reqs)-1]
}

// receivedPath is the context key of the path a request came in on,
// where a fake serves it through another's handler (Azure's through
// OpenAI's).
type receivedPath struct{}

// receive records a request and returns the reply for it.
func (f *fake) receive(r *http.Request) (Request, Reply, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return Request{}, Reply{}, err
	}
	path := r.URL.Path
	if p, ok := r.Context().Value(receivedPath{}).(string); ok {
		path = p
	}
	req := Request{Path: path, Header: r.Header.Clone(), Raw: raw}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		return req, Reply{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.received = append(f.received, req)
	for marker, r := range f.marked {
		if bytes.Contains(raw, []byte(marker)) {
			return req, r, nil
		}
	}
	reply := f.fallback
	if len(f.queue) > 0 {
		reply, f.queue = f.queue[0], f.queue[1:]
	}
	return req, reply, nil
}

// unreceive puts a reply back at the head of the queue.
func (f *fake) unreceive(r Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append([]Reply{r}, f.queue...)
}

// wait sleeps for the reply's delay, or until the caller gives up; it
// reports whether to answer.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// hold waits on a reply's Hold, if any; it reports whether to go on.
func hold(r *http.Request, c <-chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	case <-r.Context().Done():
		return false
	}
}

// pieces splits text into the stream's content deltas.
func pieces(text string, size int) []string {
	if size <= 0 {
		size = 4
	}
	var out []string
	for len(text) > size {
		out = append(out, text[:size])
		text = text[size:]
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}

// writeAnswer writes a 200 answer: v as JSON, or its first half when the
// reply says to cut it off.
func writeAnswer(w http.ResponseWriter, r Reply, v any) {
	if !r.TruncateBody {
		writeJSON(w, http.StatusOK, v)
		return
	}
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b[:len(b)/2])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		_, _ = io.WriteString(w, "event: "+event+"\n")
	}
	_, _ = io.WriteString(w, "data: "+string(b)+"\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func finish(r Reply) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
