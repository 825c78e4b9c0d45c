package providers_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gw-gateway/gw/server/providers"
)

const (
	reuseOpenAIStream = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}` + "\n\n" +
		"data: [DONE]\n\n"
	reuseAnthropicStream = "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}}` + "\n\n" +
		"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}` + "\n\n" +
		"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}` + "\n\n" +
		"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n"
)

// streamServer writes stream event by event, each flushed as a model's
// stream is, then waits tail before its handler returns: the body's end
// (HTTP/1.1's last chunk) comes that long after the last event. It counts
// the connections it was given.
func streamServer(t *testing.T, stream string, tail time.Duration) (base string, conns *atomic.Int64) {
	t.Helper()
	conns = new(atomic.Int64)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			for ev := range strings.SplitAfterSeq(stream, "\n\n") {
				_, _ = io.WriteString(w, ev)
				w.(http.Flusher).Flush()
			}
			select {
			case <-time.After(tail):
			case <-r.Context().Done():
			}
		})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), conns
}

// readAll reads s to its end, then closes it, and returns how long the
// close took.
func readAll(t *testing.T, s providers.ChunkStream) time.Duration {
	t.Helper()
	for {
		if _, err := s.Recv(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	s.Close()
	return time.Since(start)
}

// A stream read to its end leaves its upstream connection for the next
// call, as a non-streaming call does, though the body's end comes a moment
// after the last event: twenty streams, one after another, go over one
// connection (each took one of its own before, closed before its body's
// end). The OpenAI dialect and Anthropic's Messages.
func TestStreamReusesItsConnection(t *testing.T) {
	const body = `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		name    string
		stream  string
		adapter providers.Adapter
	}{
		{"openai", reuseOpenAIStream, openAI(providers.DialectOpenAI)},
		{"anthropic", reuseAnthropicStream, anthropicAdapter()},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, conns := streamServer(t, c.stream, 2*time.Millisecond)
			for range 20 {
				s, err := c.adapter.Stream(context.Background(), call(t, base, body))
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, s)
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("20 streams, one after another, took %d connections; want 1", n)
			}
		})
	}
}

// An upstream that keeps its body open after the last event holds the
// close for a bounded moment only, then loses its connection, as before;
// and closing a stream its caller left before its end does not wait on the
// upstream either. (Both bounds are generous: they hold that a close never
// hangs, not how fast it is.)
func TestStreamCloseIsBounded(t *testing.T) {
	const body = `{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	a := openAI(providers.DialectOpenAI)
	t.Run("body held open", func(t *testing.T) {
		base, conns := streamServer(t, reuseOpenAIStream, time.Minute)
		for range 2 {
			s, err := a.Stream(context.Background(), call(t, base, body))
			if err != nil {
				t.Fatal(err)
			}
			if took := readAll(t, s); took > 10*time.Second {
				t.Fatalf("closing a stream whose body stays open took %v", took)
			}
		}
		if n := conns.Load(); n != 2 {
			t.Errorf("two streams whose bodies stayed open took %d connections; want 2", n)
		}
	})
	t.Run("left before its end", func(t *testing.T) {
		base, _ := streamServer(t, reuseOpenAIStream, time.Minute)
		s, err := a.Stream(context.Background(), call(t, base, body))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { s.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("closing a stream left before its end waits for the upstream")
		}
	})
}
