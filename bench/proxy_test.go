package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestProxyAnswersWhileTheBodyArrives holds the baseline proxy full
// duplex: an upstream that answers before it has read the whole request
// body is relayed while the caller is still sending it. Half duplex, the
// proxy's server would read the rest of the body away at the answer's first
// write — here it waits for bytes the caller sends only once that answer
// has begun — which under load is what cut the proxy's streams short
// (newProxy).
func TestProxyAnswersWhileTheBodyArrives(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		_ = rc.Flush()
		rest, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "data: "+string(rest)+"\n\n")
	}))
	defer up.Close()
	h, err := newProxy(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := httptest.NewServer(h)
	defer px.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body, send := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, px.URL+"/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		_, _ = io.WriteString(send, "hello")
		select {
		case <-started:
			_, _ = io.WriteString(send, " world")
			_ = send.Close()
		case <-ctx.Done():
			_ = send.CloseWithError(ctx.Err())
		}
	}()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer while the body was still being sent: %v", err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	if err != nil || first != "data: first\n" {
		t.Fatalf("first event %q, %v", first, err)
	}
	close(started)
	rest, err := io.ReadAll(r)
	if err != nil || !strings.Contains(string(rest), "data: hello world\n") {
		t.Fatalf("the rest %q, %v", rest, err)
	}
}
