package dataplane_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
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

// A chat stream's last event ([DONE]) leaves with the chunked body's
// terminator in one write: flushing it on its own made net/http write the
// five bytes of the terminator in a second one, after the handler.
func TestStreamEndsInOneWrite(t *testing.T) {
	p := newAllocPath(t)
	srv := httptest.NewUnstartedServer(p.h)
	rec := &recordingListener{Listener: srv.Listener}
	srv.Listener = rec
	srv.Start()
	defer srv.Close()

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/inf/v1/chat/completions", bytes.NewReader(allocStreamBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
		t.Fatalf("status %d, %v: %q", resp.StatusCode, err, body)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	last := rec.writes[len(rec.writes)-1]
	if !bytes.Contains(last, []byte("data: [DONE]\n\n")) || !bytes.HasSuffix(last, []byte("0\r\n\r\n")) {
		t.Errorf("the stream's last write is %q; want [DONE] and the chunked terminator together", last)
	}
}
