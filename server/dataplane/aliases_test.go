package dataplane_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// alias stores a model alias of the organization (ws nil) or a workspace.
func (e *infEnv) alias(t *testing.T, ws bool, name string, targets ...backend.AliasTarget) {
	t.Helper()
	sc := store.AliasScope{OrgID: e.org.ID}
	if ws {
		sc.WorkspaceID = &e.ws
	}
	if _, err := backend.CreateModelAlias(context.Background(), e.st, backend.System("test"),
		backend.AliasCreate{Scope: sc, Name: name, Targets: targets}); err != nil {
		t.Fatal(err)
	}
}

// get answers a GET on the data plane with the key.
func (e *infEnv) get(t *testing.T, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Aliases are discovered when a target is visible, answer the identical
// 404 otherwise, route to a target, fall back to the others, and are
// metered as asked for (requested_model) and as served (model).
func TestModelAliases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		dataplane.DrawHeaviestFirst(t)
		const opus, hidden, codex = "claude-opus-4-8[1m]", "claude-hidden", "gpt-5.1-codex"
		e.alias(t, false, opus, backend.AliasTarget{Model: gptMini, Weight: 1})
		// The workspace's alias of that name wins: it goes to Anthropic.
		e.alias(t, true, opus, backend.AliasTarget{Model: haiku, Weight: 1})
		e.alias(t, false, hidden, backend.AliasTarget{Model: "openai/gpt-4o", Weight: 1})
		e.alias(t, false, codex, backend.AliasTarget{Model: haiku, Weight: 100}, backend.AliasTarget{Model: gptMini, Weight: 1})
		// A policy hides gpt-4o, so the alias that only reaches it is hidden.
		e.policy(t, rule(`{"kind":"request","models":["openai/gpt-4o"],"stream":null,"capabilities":[]}`, `{"kind":"deny","message":"no"}`))
		e.sync(t)

		st, list := e.get(t, "/inf/v1/models")
		if st != 200 || !strings.Contains(list, `"id":"`+opus+`"`) || !strings.Contains(list, `"alias_of":["`+haiku+`"]`) || strings.Contains(list, hidden) {
			t.Fatalf("list: %d %s", st, list)
		}
		st, one := e.get(t, "/inf/v1/models/"+url.PathEscape(opus))
		if st != 200 || !strings.Contains(one, `"id":"`+opus+`"`) {
			t.Fatalf("one: %d %s", st, one)
		}
		st404, hid := e.get(t, "/inf/v1/models/"+hidden)
		_, unknown := e.get(t, "/inf/v1/models/nope")
		if st404 != 404 || strings.ReplaceAll(hid, hidden, "X") != strings.ReplaceAll(unknown, "nope", "X") {
			t.Fatalf("hidden alias %d %s, unknown %s", st404, hid, unknown)
		}
		if got := e.postError(t, `{"model":"`+hidden+`","messages":[{"role":"user","content":"hi"}]}`, 404); code(got) != "model_not_found" {
			t.Fatalf("inference on a hidden alias: %+v", got)
		}

		// Through the Messages endpoint, the alias reaches its target.
		e.anthropic.Enqueue(providerstest.Reply{Text: "hello", Usage: providerstest.Usage{Input: 5, Output: 2}})
		e.usage.reset()
		resp := e.postTo(t, "/inf/v1/messages", `{"model":"`+opus+`","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("messages: %d %s", resp.StatusCode, b)
		}
		ev := e.usage.snapshot()
		if len(ev) != 1 || ev[0].RequestedModel != opus || ev[0].Model != haiku {
			t.Fatalf("usage %+v", ev)
		}

		// count_tokens takes an alias too (Claude Code counts with the
		// model name it asks for).
		e.anthropic.Enqueue(providerstest.Reply{Usage: providerstest.Usage{Input: 77}})
		resp = e.postTo(t, "/inf/v1/messages/count_tokens", `{"model":"`+opus+`","messages":[{"role":"user","content":"hi"}]}`)
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"input_tokens":77}` {
			t.Fatalf("count_tokens on an alias: %d %s", resp.StatusCode, b)
		}

		// The heavier target fails; the other target serves.
		e.anthropic.Enqueue(providerstest.Reply{Status: 500, Message: "boom"})
		e.openai.Enqueue(providerstest.Reply{Text: "from openai", Usage: providerstest.Usage{Input: 3, Output: 1}})
		e.usage.reset()
		served := 0
		for range 1 {
			resp := e.post(t, `{"model":"`+codex+`","messages":[{"role":"user","content":"hi"}]}`)
			b, _ := io.ReadAll(resp.Body)
			var out struct {
				Choices []struct{ Message struct{ Content string } }
			}
			_ = json.Unmarshal(b, &out)
			if resp.StatusCode == 200 && len(out.Choices) == 1 && out.Choices[0].Message.Content == "from openai" {
				served++
			}
		}
		ev = e.usage.snapshot()
		if served != 1 || len(ev) != 1 || ev[0].RequestedModel != codex || ev[0].Model != gptMini || len(ev[0].Attempts) != 2 {
			t.Fatalf("fallback across targets: served %d, usage %+v", served, ev)
		}
	})
}

// postTo sends a raw request to an inference path with the key in both
// the OpenAI and the Anthropic header.
func (e *infEnv) postTo(t *testing.T, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", e.token)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
