package dataplane_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// chatBody is a chat completion of about n bytes.
func chatBody(n int, stream bool) string {
	head := fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":"`, gptMini, stream)
	return head + strings.Repeat("x", n-len(head)-4) + `"}]}`
}

// sendHead sends a request's head, declaring a body of n bytes, and only
// the first few bytes of the body; it returns the answer, which must come
// without the rest of the body. chunked declares no length at all and
// sends n bytes in chunks.
func sendHead(t *testing.T, url, path, token string, n int, chunked bool) (int, http.Header, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	body := chatBody(n, false)
	if chunked {
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", path, token)
		go func() {
			for rest := body; rest != ""; {
				c := rest[:min(len(rest), 32<<10)]
				rest = rest[len(c):]
				if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(c), c); err != nil {
					return
				}
			}
			_, _ = io.WriteString(conn, "0\r\n\r\n")
		}()
	} else {
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, token, n, body[:64])
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer with the body unsent: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw
}

// Issue 17, first row: one valid key could make the process hold any
// number of large bodies at once. Bodies are now counted against a
// process-wide budget and a per-key share before they are read; over
// either, the answer is 503 overloaded with Retry-After, in the dialect's
// error shape, and the body is not read. The share comes back when the
// answer is written.
func TestBodyBudgetRefusesBeforeReading(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		const kib = 1 << 10
		e := newInfEnv(t, db, func(o *dataplane.Options) {
			o.MaxRequestBytes = 1024 * kib
			o.KeyBodyBytesInFlight = 1536 * kib
			o.BodyBytesInFlight = 2560 * kib
		})
		other, _ := e.org.Key(e.ws, e.owner, nil)
		third, _ := e.org.Key(e.ws, e.owner, nil)
		e.sync(t)

		// A 900 KiB stream held open by the upstream keeps its body's
		// bytes in flight.
		release := make(chan struct{})
		e.openai.Enqueue(providerstest.Reply{Text: "held answer", Hold: release, Usage: providerstest.Usage{Input: 10, Output: 2}})
		held := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("POST", e.srv.URL+"/inf/v1/chat/completions", strings.NewReader(chatBody(900*kib, true)))
			req.Header.Set("Authorization", "Bearer "+e.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				held <- 0
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			held <- resp.StatusCode
		}()
		waitUntil(t, "the held request upstream", func() bool { return len(e.openai.Requests()) == 1 })

		overloaded := func(name string, status int, header http.Header, raw []byte, anthropic bool) {
			t.Helper()
			if status != http.StatusServiceUnavailable || header.Get("Retry-After") == "" {
				t.Fatalf("%s: %d %s (Retry-After %q), want 503 with Retry-After", name, status, raw, header.Get("Retry-After"))
			}
			var body struct {
				Type  string
				Error struct{ Type, Code, Message string }
			}
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("%s: %s", name, raw)
			}
			if anthropic && (body.Type != "error" || body.Error.Type != "overloaded_error") ||
				!anthropic && body.Error.Code != "overloaded" {
				t.Fatalf("%s: not overloaded in the dialect's shape: %s", name, raw)
			}
		}
		// The same key: its share (1.5 MiB) cannot hold another 900 KiB,
		// declared or chunked, in either dialect.
		status, header, raw := sendHead(t, e.srv.URL, "/inf/v1/chat/completions", e.token, 900*kib, false)
		overloaded("same key, declared length", status, header, raw, false)
		status, header, raw = sendHead(t, e.srv.URL, "/inf/v1/messages", e.token, 900*kib, false)
		overloaded("same key, Messages", status, header, raw, true)
		status, header, raw = sendHead(t, e.srv.URL, "/inf/v1/chat/completions", e.token, 900*kib, true)
		overloaded("same key, chunked", status, header, raw, false)
		if !strings.Contains(string(raw), "This key") {
			t.Errorf("the refusal does not say the key's share is spent: %s", raw)
		}
		// Another key has a share of its own...
		e.openai.Enqueue(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 10, Output: 2}})
		resp := postAs(t, e.srv.URL, other, chatBody(900*kib, false))
		if resp.StatusCode != 200 {
			t.Fatalf("another key: %d", resp.StatusCode)
		}
		// ...but not beyond the process's budget (2.5 MiB): with a
		// second body held, a third key's does not fit.
		release2 := make(chan struct{})
		e.openai.Enqueue(providerstest.Reply{Text: "held too", Hold: release2, Usage: providerstest.Usage{Input: 10, Output: 2}})
		held2 := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("POST", e.srv.URL+"/inf/v1/chat/completions", strings.NewReader(chatBody(900*kib, true)))
			req.Header.Set("Authorization", "Bearer "+other)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				held2 <- 0
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			held2 <- resp.StatusCode
		}()
		waitUntil(t, "the second held request upstream", func() bool { return len(e.openai.Requests()) == 3 })
		status, header, raw = sendHead(t, e.srv.URL, "/inf/v1/chat/completions", third, 900*kib, false)
		overloaded("third key over the process budget", status, header, raw, false)
		if strings.Contains(string(raw), "This key") {
			t.Errorf("the process-wide refusal blames the key: %s", raw)
		}
		// Small bodies still pass while the budget is nearly full.
		e.openai.Enqueue(providerstest.Reply{Text: "small", Usage: providerstest.Usage{Input: 1, Output: 1}})
		if resp := postAs(t, e.srv.URL, third, chatBody(2*kib, false)); resp.StatusCode != 200 {
			t.Fatalf("small body beside the held ones: %d", resp.StatusCode)
		}

		// Once the held answers are written, the shares are back.
		close(release)
		close(release2)
		if s := <-held; s != 200 {
			t.Fatalf("held request: %d", s)
		}
		if s := <-held2; s != 200 {
			t.Fatalf("second held request: %d", s)
		}
		for _, token := range []string{e.token, third} {
			e.openai.Enqueue(providerstest.Reply{Text: "after", Usage: providerstest.Usage{Input: 1, Output: 1}})
			if resp := postAs(t, e.srv.URL, token, chatBody(900*kib, false)); resp.StatusCode != 200 {
				t.Fatalf("after the held requests ended: %d", resp.StatusCode)
			}
		}
		// Refused bodies never reached the upstream, nor the usage record.
		if n := len(e.openai.Requests()); n != 6 {
			t.Fatalf("the upstream saw %d requests, want 6", n)
		}
	})
}

// postAs sends a chat completion with token.
func postAs(t *testing.T, url, token, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/inf/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// The playground's bodies count against the same budget, under the
// caller's playground key.
func TestBodyBudgetCountsThePlayground(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		const kib = 1 << 10
		e := newInfEnv(t, db, func(o *dataplane.Options) {
			o.MaxRequestBytes = 512 * kib
			o.KeyBodyBytesInFlight = 512 * kib
			o.BodyBytesInFlight = 512 * kib
		})
		e.sync(t)
		caller := dataplane.Caller{UserID: e.owner}
		pg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e.plane.ServePlayground(w, r, e.org.ID, e.ws, caller)
		}))
		t.Cleanup(pg.Close)
		release := make(chan struct{})
		e.openai.Enqueue(providerstest.Reply{Text: "held", Hold: release, Usage: providerstest.Usage{Input: 1, Output: 1}})
		done := make(chan int, 1)
		go func() {
			resp, err := http.Post(pg.URL, "application/json", strings.NewReader(chatBody(400*kib, true)))
			if err != nil {
				done <- 0
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		waitUntil(t, "the playground request upstream", func() bool { return len(e.openai.Requests()) == 1 })
		// An inference key's body no longer fits in the process's budget.
		status, _, raw := sendHead(t, e.srv.URL, "/inf/v1/chat/completions", e.token, 400*kib, false)
		if status != http.StatusServiceUnavailable || !strings.Contains(string(raw), "overloaded") {
			t.Fatalf("beside a held playground body: %d %s", status, raw)
		}
		close(release)
		if s := <-done; s != 200 {
			t.Fatalf("playground request: %d", s)
		}
	})
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
