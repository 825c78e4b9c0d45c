package dataplane_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store/storetest"
)

// A refusal names the member the caller sent (issue 28): a Messages
// request's thinking, a Responses request's reasoning, never the
// reasoning_effort of their translation.
func TestRefusalsNameTheDialectsOwnMembers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		for _, c := range []struct {
			path, body, member string
		}{
			{"/inf/v1/messages", `{"model":"` + gptMini + `","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":1024},` +
				`"messages":[{"role":"user","content":"hi"}]}`, "thinking"},
			{"/inf/v1/messages", `{"model":"anthropic/claude-3-5-haiku-20241022","max_tokens":2000,` +
				`"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}]}`, "thinking"},
			{"/inf/v1/responses", `{"model":"` + gptMini + `","reasoning":{"effort":"low"},"input":"hi"}`, `"param":"reasoning"`},
			{"/inf/v1/chat/completions", `{"model":"` + gptMini + `","reasoning_effort":"low","messages":[{"role":"user","content":"hi"}]}`,
				`"param":"reasoning_effort"`},
		} {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+e.token)
			req.Header.Set("X-Api-Key", e.token)
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), c.member) ||
				c.path != "/inf/v1/chat/completions" && strings.Contains(string(raw), "reasoning_effort") {
				t.Errorf("%s: %d %s, want it to name %s", c.path, resp.StatusCode, raw, c.member)
			}
		}
	})
}
