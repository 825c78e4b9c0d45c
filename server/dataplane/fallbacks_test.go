package dataplane_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// TestRequestFallbackLists (issue 35): OpenRouter's models and LiteLLM's
// fallbacks in a request's body are tried in order when the model asked
// for fails transiently, through the fallback machinery: each entry
// judged by the policies like any target (one they refuse is skipped),
// an entry the key cannot see a 404 naming it before any upstream call,
// and the list never sent upstream.
func TestRequestFallbackLists(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		// gpt-4o stays visible but is refused for non-streamed requests.
		e.policy(t, rule(`{"kind":"request","models":["openai/gpt-4o"],"stream":false,"capabilities":[]}`, `{"kind":"deny","message":"streams only"}`))
		e.sync(t)
		const hi = `"messages":[{"role":"user","content":"hi"}]`
		ask := func(body string) (int, string, wire.UsageEventIn) {
			t.Helper()
			e.usage.reset()
			resp := e.post(t, body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var ev wire.UsageEventIn
			if resp.StatusCode != 404 && resp.StatusCode != 400 {
				ev = e.usage.last(t, 1)
			}
			return resp.StatusCode, string(b), ev
		}
		served := func(ev wire.UsageEventIn, model string, attempts int) bool {
			return ev.Model == model && ev.RequestedModel == gptMini && len(ev.Attempts) == attempts
		}
		lastOpenAI := func() providerstest.Request {
			r := e.openai.Requests()
			return r[len(r)-1]
		}

		// The model answers: the list is not used, and not sent.
		e.openai.Enqueue(providerstest.Reply{Text: "first", Usage: providerstest.Usage{Input: 3, Output: 1}})
		if st, raw, ev := ask(`{"model":"` + gptMini + `","models":["` + haiku + `"],` + hi + `}`); st != 200 || !served(ev, gptMini, 1) {
			t.Fatalf("model answers: %d %s %+v", st, raw, ev)
		}
		if _, ok := lastOpenAI().Body["models"]; ok {
			t.Fatalf("the list went upstream: %s", lastOpenAI().Raw)
		}

		// OpenRouter's models: the model unavailable, the next entry serves.
		e.openai.Enqueue(providerstest.Reply{Status: 503, Message: "down"})
		e.anthropic.Enqueue(providerstest.Reply{Text: "second", Usage: providerstest.Usage{Input: 3, Output: 1}})
		if st, raw, ev := ask(`{"model":"` + gptMini + `","models":["` + haiku + `"],` + hi + `}`); st != 200 || !strings.Contains(raw, "second") ||
			!served(ev, haiku, 2) {
			t.Fatalf("models: %d %s %+v", st, raw, ev)
		}
		if strings.Contains(string(e.anthropic.Requests()[len(e.anthropic.Requests())-1].Raw), `"models"`) {
			t.Fatal("the list went to the fallback's upstream")
		}

		// LiteLLM's fallbacks, a rate limit; the entry the policies refuse
		// for this request (gpt-4o, not streamed) is skipped, not called.
		calls := len(e.openai.Requests())
		e.openai.Enqueue(providerstest.Reply{Status: 429, Message: "slow down"})
		e.anthropic.Enqueue(providerstest.Reply{Text: "third", Usage: providerstest.Usage{Input: 3, Output: 1}})
		if st, raw, ev := ask(`{"model":"` + gptMini + `","fallbacks":["openai/gpt-4o","` + haiku + `"],` + hi + `}`); st != 200 ||
			!strings.Contains(raw, "third") || !served(ev, haiku, 2) {
			t.Fatalf("fallbacks: %d %s %+v", st, raw, ev)
		}
		if n := len(e.openai.Requests()) - calls; n != 1 {
			t.Fatalf("%d OpenAI calls: the refused entry was called", n)
		}

		// A failure that is not transient is answered, not fallen back on.
		e.openai.Enqueue(providerstest.Reply{Status: 400, Message: "bad"})
		anth := len(e.anthropic.Requests())
		if st, raw, _ := ask(`{"model":"` + gptMini + `","models":["` + haiku + `"],` + hi + `}`); st != 400 || len(e.anthropic.Requests()) != anth {
			t.Fatalf("a 400 upstream: %d %s", st, raw)
		}

		// No model: the list's first entry is asked for.
		e.anthropic.Enqueue(providerstest.Reply{Text: "fourth", Usage: providerstest.Usage{Input: 3, Output: 1}})
		if st, raw, ev := ask(`{"models":["` + haiku + `","` + gptMini + `"],` + hi + `}`); st != 200 || ev.Model != haiku || ev.RequestedModel != haiku {
			t.Fatalf("models without model: %d %s %+v", st, raw, ev)
		}

		// Refused before any upstream call, naming the entry or member,
		// with no event.
		calls, anth = len(e.openai.Requests()), len(e.anthropic.Requests())
		e.usage.reset()
		for _, c := range []struct {
			body   string
			status int
			param  string
			words  string
		}{
			{`{"model":"` + gptMini + `","models":["` + haiku + `","openai/nope"],` + hi + `}`, 404, "models[1]", "'openai/nope' in models[1]"},
			{`{"model":"` + gptMini + `","fallbacks":["openai/nope"],` + hi + `}`, 404, "fallbacks[0]", "'openai/nope' in fallbacks[0]"},
			{`{"model":"` + gptMini + `","fallbacks":[{"model":"` + haiku + `"}],` + hi + `}`, 400, "fallbacks", "list of model ids"},
			{`{"model":"` + gptMini + `","models":["` + haiku + `"],"fallbacks":["` + haiku + `"],` + hi + `}`, 400, "fallbacks", "not both"},
			{`{"model":"` + gptMini + `","models":"` + haiku + `",` + hi + `}`, 400, "models", "list of model ids"},
		} {
			resp := e.post(t, c.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var got openAIError
			if resp.StatusCode != c.status || json.Unmarshal(b, &got) != nil || got.Error.Param == nil || *got.Error.Param != c.param ||
				!strings.Contains(got.Error.Message, c.words) {
				t.Errorf("%s: %d %s", c.body, resp.StatusCode, b)
			}
		}
		if len(e.openai.Requests()) != calls || len(e.anthropic.Requests()) != anth || len(e.usage.snapshot()) != 0 {
			t.Fatalf("refused lists reached an upstream or left events: %d %d %d", len(e.openai.Requests())-calls,
				len(e.anthropic.Requests())-anth, len(e.usage.snapshot()))
		}
	})
}
