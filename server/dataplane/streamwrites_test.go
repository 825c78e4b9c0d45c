package dataplane_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/reseal"
	"github.com/gw-gateway/gw/server/secrets"
)

// recordingListener keeps what each accepted connection's Write was
// given: one Write is one write(2).
type recordingListener struct {
	net.Listener
	mu     sync.Mutex
	writes [][]byte
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, l: l}, nil
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes = append(c.l.writes, bytes.Clone(p))
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// postRecorded serves h behind a recordingListener, posts body to path
// with header and returns the answer's body (failing the test unless it
// is a 200) and each write the server made.
func postRecorded(t *testing.T, h http.Handler, path, body string, header http.Header) ([]byte, [][]byte) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	rec := &recordingListener{Listener: srv.Listener}
	srv.Listener = rec
	srv.Start()
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v: %q", resp.StatusCode, err, answer)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return answer, rec.writes
}

// A chat stream's last event ([DONE]) leaves with the chunked body's
// terminator in one write: flushing it on its own made net/http write the
// five bytes of the terminator in a second one, after the handler.
func TestStreamEndsInOneWrite(t *testing.T) {
	p := newAllocPath(t)
	body, writes := postRecorded(t, p.h, "/inf/v1/chat/completions", string(allocStreamBody),
		http.Header{"Authorization": {"Bearer " + p.token}})
	if !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
		t.Fatalf("stream not relayed whole: %q", body)
	}
	last := writes[len(writes)-1]
	if !bytes.Contains(last, []byte("data: [DONE]\n\n")) || !bytes.HasSuffix(last, []byte("0\r\n\r\n")) {
		t.Errorf("the stream's last write is %q; want [DONE] and the chunked terminator together", last)
	}
}

// messagesUpstream answers a Messages stream, every event at once.
type messagesUpstream struct{}

const messagesEvents = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-haiku-4-5-20251001\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
	": a comment\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" there\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

func (messagesUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(messagesEvents)), ContentLength: -1, Request: r,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// A Messages stream relayed from its own dialect writes the events an
// upstream delivered together in one write, as a chat stream does, the
// last with the stream's end: it wrote and flushed every event.
func TestMessagesStreamEventsTogether(t *testing.T) {
	base := "http://anthropic.test"
	token, signed, pub, kr := benchBundleEdit(t, "http://upstream.test/v1", "", nil, func(b *bundle.Body, kr *secrets.Keyring) {
		id := uuid.New()
		sealed, err := kr.Seal([]byte("sk-ant-test"), reseal.CredentialAAD(id))
		if err != nil {
			t.Fatal(err)
		}
		b.Credentials = append(b.Credentials, bundle.Credential{ID: id, Scope: policy.ScopeOrg, Provider: "anthropic", BaseURL: &base, SecretSealed: sealed})
	})
	plane := dataplane.NewPlane(pub, dataplane.Options{Keyring: kr, Usage: &countingSink{},
		Upstreams: providers.NewSet(&http.Client{Transport: messagesUpstream{}})})
	if err := plane.Admit(signed); err != nil {
		t.Fatal(err)
	}
	plane.MarkReady()
	body, writes := postRecorded(t, plane, "/inf/v1/messages",
		`{"model":"anthropic/claude-haiku-4-5-20251001","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`,
		http.Header{"X-Api-Key": {token}, "Anthropic-Version": {"2023-06-01"}})
	var types []string
	for _, line := range strings.Split(string(body), "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			types = append(types, name)
		}
	}
	want := []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if !slices.Equal(types, want) {
		t.Fatalf("events %q, want %q", types, want)
	}
	// Here the whole stream was at hand at once: nothing was flushed
	// before the handler's end, so net/http sent it with its length.
	if len(writes) != 1 {
		t.Errorf("the stream took %d writes (%q); want its headers, events and end in one", len(writes), writes)
	}
}
