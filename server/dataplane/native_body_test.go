package dataplane_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// Issue 27, row 2: a native Responses request was translated to Chat
// Completions for routing and decoded and encoded again to set store, and
// a Messages request translated too: 16 × 30 MiB bodies took the process
// to 1.0 GB (Messages) and 1.5 GB (Responses), against 541 MB for Chat
// Completions. Now a request that goes to an upstream of its own dialect
// holds its body and a small outline while it is in flight, and reaches
// the upstream as sent with only model, stream and store written over its
// bytes; a request translated for another upstream holds, and counts in
// the body budget, its translation too.
func TestNativeBodiesAreForwardedAsSent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		const kib = 1 << 10
		e := newInfEnv(t, db)
		e.sync(t)
		text := strings.Repeat("x", 900*kib)
		cases := []struct {
			name, path, body string
			upstream         func() []providerstest.Request
			enqueue          func(...providerstest.Reply)
			// sent is the body the upstream must get; "" for a
			// translated request.
			sent string
		}{
			{"responses to openai", "/inf/v1/responses",
				`{"model":"` + gptMini + `", "stream": true,"input":[{"role":"user","content":[{"type":"input_text","text":"` + text + `"}]}], "store":false}`,
				e.openai.Requests, e.openai.Enqueue,
				`{"model":"gpt-4o-mini","stream":true,"input":[{"role":"user","content":[{"type":"input_text","text":"` + text + `"}]}],"store":false}`},
			{"responses without store", "/inf/v1/responses",
				`{"input":"` + text + `","model":"` + gptMini + `","stream":true}`,
				e.openai.Requests, e.openai.Enqueue,
				`{"input":"` + text + `","model":"gpt-4o-mini","stream":true,"store":false}`},
			{"messages to anthropic", "/inf/v1/messages",
				`{"max_tokens":64,"model":"` + haiku + `","stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`,
				e.anthropic.Requests, e.anthropic.Enqueue,
				`{"max_tokens":64,"model":"claude-haiku-4-5-20251001","stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`},
			{"messages translated for openai", "/inf/v1/messages",
				`{"max_tokens":64,"model":"` + gptMini + `","stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`,
				e.openai.Requests, e.openai.Enqueue, ""},
		}
		// (The members written over lose the spaces around them; the
		// rest is as sent.)
		for _, c := range cases {
			before := len(c.upstream())
			release := make(chan struct{})
			c.enqueue(providerstest.Reply{Text: "held answer", Hold: release, Usage: providerstest.Usage{Input: 10, Output: 2}})
			done := make(chan int, 1)
			go func() {
				req, _ := http.NewRequest("POST", e.srv.URL+c.path, strings.NewReader(c.body))
				req.Header.Set("Authorization", "Bearer "+e.token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- 0
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				done <- resp.StatusCode
			}()
			waitUntil(t, c.name+" upstream", func() bool { return len(c.upstream()) > before })
			held := dataplane.BodyBytesHeld(e.plane, e.keyID)
			close(release)
			if status := <-done; status != 200 {
				t.Fatalf("%s: %d", c.name, status)
			}
			got := c.upstream()[before]
			body := int64(len(c.body))
			if c.sent == "" {
				// The translation (about the body's size) is counted.
				if held < 2*body-16*kib {
					t.Errorf("%s: %d bytes held for a %d byte body translated whole", c.name, held, body)
				}
				continue
			}
			if held > body+16*kib {
				t.Errorf("%s: %d bytes held for a %d byte body: more than the body and its outline", c.name, held, body)
			}
			if string(got.Raw) != c.sent {
				t.Errorf("%s: upstream got %s", c.name, clip(string(got.Raw)))
			}
		}
		if n := dataplane.BodyBytesHeld(e.plane, e.keyID); n != 0 {
			t.Errorf("%d body bytes still held after the answers", n)
		}
	})
}

// clip shortens a long body around its text for a message.
func clip(s string) string {
	if len(s) < 400 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", s[:200], len(s)-400, s[len(s)-200:])
}
