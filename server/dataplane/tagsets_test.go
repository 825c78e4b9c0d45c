package dataplane_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// Issue 27, row 7: one key sent 10,500 requests in 3.5 s, each with a new
// X-Gw-Tags set, and 9,258 sets were registered. A key now brings at most
// KeyTagSetsPerMinute sets new to it per minute; past that a request with
// yet another set is 429 too_many_tag_sets with Retry-After until the
// first of them is a minute old, while sets the key used lately, requests
// without tags and other keys pass.
func TestTagSetsPerKeyAreBounded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		clock := &fakeClock{}
		start := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
		clock.set(start)
		e := newInfEnv(t, db, withClock(clock.now), func(o *dataplane.Options) { o.KeyTagSetsPerMinute = 3 })
		other, _ := e.org.Key(e.ws, e.owner, nil)
		e.sync(t)
		send := func(token, path, model, tags string) (int, http.Header, string) {
			t.Helper()
			body := `{"model":"` + model + `","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
			req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			if tags != "" {
				req.Header.Set("X-Gw-Tags", tags)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header, string(raw)
		}
		chat := "/inf/v1/chat/completions"
		// Three new sets, ten seconds apart, and one of them again.
		for i, tags := range []string{"run=1", "run=2", "run=3", "run=1"} {
			clock.set(start.Add(time.Duration(min(i, 2)) * 10 * time.Second))
			if s, _, raw := send(e.token, chat, gptMini, tags); s != 200 {
				t.Fatalf("%s: %d %s", tags, s, raw)
			}
		}
		clock.set(start.Add(20 * time.Second))
		status, header, raw := send(e.token, chat, gptMini, "run=4")
		var body struct {
			Error struct{ Code, Param, Message string }
		}
		_ = json.Unmarshal([]byte(raw), &body)
		if status != http.StatusTooManyRequests || body.Error.Code != "too_many_tag_sets" || body.Error.Param != "X-Gw-Tags" ||
			header.Get("Retry-After") != "40" {
			t.Fatalf("a fourth new set within the minute: %d %s (Retry-After %q)", status, raw, header.Get("Retry-After"))
		}
		// In Anthropic's shape on /messages.
		status, _, raw = send(e.token, "/inf/v1/messages", haiku, "run=5")
		if status != http.StatusTooManyRequests || !strings.Contains(raw, `"rate_limit_error"`) {
			t.Fatalf("messages: %d %s", status, raw)
		}
		for name, try := range map[string][3]string{
			"a set used lately": {e.token, "run=2", ""},
			"no tags":           {e.token, "", ""},
			"another key":       {other, "run=4", ""},
		} {
			if s, _, raw := send(try[0], chat, gptMini, try[1]); s != 200 {
				t.Errorf("%s: %d %s", name, s, raw)
			}
		}
		// A minute after the first new set, one more fits, and only one.
		clock.set(start.Add(time.Minute))
		if s, _, raw := send(e.token, chat, gptMini, "run=4"); s != 200 {
			t.Fatalf("a minute later: %d %s", s, raw)
		}
		if s, _, _ := send(e.token, chat, gptMini, "run=6"); s != http.StatusTooManyRequests {
			t.Fatalf("the next new set: %d", s)
		}
	})
}
