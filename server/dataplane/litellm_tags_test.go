package dataplane_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// litellmRequest sends body to path with the headers given in pairs, and
// returns status and body.
func litellmRequest(t *testing.T, e *infEnv, path, body string, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestLiteLLMTags (issue 35): LiteLLM's x-litellm-tags header and a
// body's metadata.tags are read as X-Gw-Tags — key=value, key:value, a
// bare tag as tag=true —, held to the same rules (a bad tag refused
// naming its header or member, no event, no upstream call), X-Gw-Tags
// winning over x-litellm-tags over metadata.tags, the key's own over all.
// metadata.tags never reaches an upstream; the rest of metadata does,
// and a string metadata.tags (OpenAI's own metadata) is left as it is.
func TestLiteLLMTags(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		ctx := context.Background()
		k, err := e.st.GetInferenceKey(ctx, e.ws, e.keyID)
		if err != nil {
			t.Fatal(err)
		}
		k.Tags = store.Tags{"team": "search"}
		if err := e.st.UpdateInferenceKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		ws, err := e.st.GetWorkspace(ctx, e.ws)
		if err != nil {
			t.Fatal(err)
		}
		ws.TagValues = store.TagValues{"env": {"prod", "staging"}}
		ws.RequiredTags = store.Strings{"feature"}
		if err := e.st.UpdateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
		e.sync(t)
		chat := func(metadata string) string {
			return `{"model":"` + gptMini + `","messages":[{"role":"user","content":"hi"}]` + metadata + `}`
		}
		tagsOf := func(n int) map[string]string {
			t.Helper()
			return e.usage.last(t, n).Tags
		}
		same := func(got map[string]string, want ...string) bool {
			if len(got) != len(want) {
				return false
			}
			for _, kv := range want {
				k, v, _ := strings.Cut(kv, "=")
				if got[k] != v {
					return false
				}
			}
			return true
		}

		// The header: pairs of each form, a bare tag, the key's team over
		// the header's.
		if st, raw := litellmRequest(t, e, "/inf/v1/chat/completions", chat(""), "X-Litellm-Tags", "feature=chat, prod,job:42,team=ads"); st != 200 {
			t.Fatalf("x-litellm-tags: %d %s", st, raw)
		}
		if got := tagsOf(1); !same(got, "team=search", "feature=chat", "prod=true", "job=42") {
			t.Fatalf("x-litellm-tags: event tags %v", got)
		}

		// metadata.tags: taken out of the body, the rest of metadata sent.
		if st, raw := litellmRequest(t, e, "/inf/v1/chat/completions",
			chat(`,"metadata":{"run":"r1","tags":["feature:chat","env=prod"]}`)); st != 200 {
			t.Fatalf("metadata.tags: %d %s", st, raw)
		}
		if got := tagsOf(2); !same(got, "team=search", "feature=chat", "env=prod") {
			t.Fatalf("metadata.tags: event tags %v", got)
		}
		reqs := e.openai.Requests()
		if meta, _ := json.Marshal(reqs[len(reqs)-1].Body["metadata"]); string(meta) != `{"run":"r1"}` {
			t.Fatalf("upstream metadata: %s", meta)
		}
		// metadata with tags alone goes with them.
		if st, raw := litellmRequest(t, e, "/inf/v1/chat/completions", chat(`,"metadata":{"tags":["feature=a"]}`)); st != 200 {
			t.Fatalf("metadata of tags alone: %d %s", st, raw)
		}
		reqs = e.openai.Requests()
		if _, ok := reqs[len(reqs)-1].Body["metadata"]; ok {
			t.Fatalf("upstream got metadata: %s", reqs[len(reqs)-1].Raw)
		}
		// A string is OpenAI's own metadata: sent on, no tag; the
		// workspace's required feature comes from the header.
		if st, raw := litellmRequest(t, e, "/inf/v1/chat/completions", chat(`,"metadata":{"tags":"a,b"}`), "X-Gw-Tags", "feature=x"); st != 200 {
			t.Fatalf("a string metadata.tags: %d %s", st, raw)
		}
		reqs = e.openai.Requests()
		if meta, _ := json.Marshal(reqs[len(reqs)-1].Body["metadata"]); string(meta) != `{"tags":"a,b"}` {
			t.Fatalf("upstream metadata: %s", meta)
		}
		if got := tagsOf(4); !same(got, "team=search", "feature=x") {
			t.Fatalf("string metadata.tags: event tags %v", got)
		}

		// Messages, forwarded to Anthropic: metadata keeps user_id only.
		msg := `{"model":"` + haiku + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u1","tags":["feature=code"]}}`
		if st, raw := litellmRequest(t, e, "/inf/v1/messages", msg); st != 200 {
			t.Fatalf("messages: %d %s", st, raw)
		}
		areqs := e.anthropic.Requests()
		if meta, _ := json.Marshal(areqs[len(areqs)-1].Body["metadata"]); string(meta) != `{"user_id":"u1"}` {
			t.Fatalf("Anthropic upstream metadata: %s", meta)
		}
		if got := tagsOf(5); !same(got, "team=search", "feature=code") {
			t.Fatalf("messages: event tags %v", got)
		}
		// count_tokens: the body's tags count for the required feature, and
		// neither they nor a fallback list reach Anthropic's count.
		e.anthropic.Enqueue(providerstest.Reply{Usage: providerstest.Usage{Input: 7}})
		count := `{"model":"` + haiku + `","messages":[{"role":"user","content":"hi"}],"models":["` + gptMini + `"],"metadata":{"tags":["feature=code"]}}`
		if st, raw := litellmRequest(t, e, "/inf/v1/messages/count_tokens", count); st != 200 || !strings.Contains(raw, `"input_tokens":7`) {
			t.Fatalf("count_tokens: %d %s", st, raw)
		}
		areqs = e.anthropic.Requests()
		if last := areqs[len(areqs)-1]; last.Body["metadata"] != nil || last.Body["models"] != nil {
			t.Fatalf("Anthropic's count got %s", last.Raw)
		}
		if st, raw := litellmRequest(t, e, "/inf/v1/messages/count_tokens", strings.Replace(count, "feature=code", "env=prod", 1)); st != 400 ||
			!strings.Contains(raw, "missing_required_tags") && !strings.Contains(raw, "feature") {
			t.Fatalf("count_tokens without the required tag: %d %s", st, raw)
		}

		// Precedence: X-Gw-Tags over x-litellm-tags over metadata.tags.
		both := chat(`,"metadata":{"tags":["feature=c","env=staging"]}`)
		if st, raw := litellmRequest(t, e, "/inf/v1/chat/completions", both, "X-Gw-Tags", "feature=a", "X-Litellm-Tags", "feature=b,job=1"); st != 200 {
			t.Fatalf("all three forms: %d %s", st, raw)
		}
		if got := tagsOf(6); !same(got, "team=search", "feature=a", "job=1", "env=staging") {
			t.Fatalf("all three forms: event tags %v", got)
		}
		if st, raw := litellmRequest(t, e, "/inf/v1/chat/completions", both, "X-Litellm-Tags", "feature=b"); st != 200 {
			t.Fatalf("two forms: %d %s", st, raw)
		}
		if got := tagsOf(7); !same(got, "team=search", "feature=b", "env=staging") {
			t.Fatalf("two forms: event tags %v", got)
		}

		// Refused like X-Gw-Tags, naming the form, before any upstream call
		// and with no event.
		e.usage.reset()
		calls := len(e.openai.Requests())
		for _, c := range []struct {
			body, header, param, code string
		}{
			{chat(`,"metadata":{"tags":["Feature:x"]}`), "", "metadata.tags", "invalid_tags"},
			{chat(`,"metadata":{"tags":[1]}`), "", "metadata.tags", "invalid_tags"},
			{chat(`,"metadata":{"tags":["env=dev","feature=a"]}`), "", "metadata.tags", "tag_not_allowed"},
			{chat(""), "Feature", "x-litellm-tags", "invalid_tags"},
			{chat(""), "feature=a,,b", "x-litellm-tags", "invalid_tags"},
			{chat(""), "env:dev,feature=a", "x-litellm-tags", "tag_not_allowed"},
			// The required feature is given by none.
			{chat(`,"metadata":{"tags":["env=prod"]}`), "", "X-Gw-Tags", "missing_required_tags"},
		} {
			var headers []string
			if c.header != "" {
				headers = []string{"X-Litellm-Tags", c.header}
			}
			st, raw := litellmRequest(t, e, "/inf/v1/chat/completions", c.body, headers...)
			var body struct {
				Error struct {
					Param *string `json:"param"`
					Code  *string `json:"code"`
				} `json:"error"`
			}
			if st != 400 || json.Unmarshal([]byte(raw), &body) != nil || body.Error.Param == nil || *body.Error.Param != c.param ||
				body.Error.Code == nil || *body.Error.Code != c.code {
				t.Errorf("%s %q: %d %s", c.body, c.header, st, raw)
			}
		}
		// Anthropic's shape on /messages.
		bad := `{"model":"` + haiku + `","max_tokens":16,"messages":[{"role":"user","content":"hi"}],"metadata":{"tags":["Bad"]}}`
		if st, raw := litellmRequest(t, e, "/inf/v1/messages", bad); st != 400 || !strings.Contains(raw, `"type":"error"`) ||
			!strings.Contains(raw, "metadata.tags") {
			t.Fatalf("messages, a bad tag: %d %s", st, raw)
		}
		if n := len(e.openai.Requests()); n != calls {
			t.Fatalf("refused requests reached the upstream: %d calls", n-calls)
		}
		if got := len(e.usage.snapshot()); got != 0 {
			t.Fatalf("refused requests left %d events", got)
		}
	})
}
