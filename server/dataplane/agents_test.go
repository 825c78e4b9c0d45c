package dataplane_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// What coding agents send, through both kinds of upstream (issue 19).
func TestAgentRequests(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.sync(t)
		ok := providerstest.Reply{Text: "done", Usage: providerstest.Usage{Input: 9, Output: 2}}

		// Claude Code's system turn inside messages.
		claude := func(model string, stream bool) string {
			s := ""
			if stream {
				s = `"stream":true,`
			}
			return `{"model":"` + model + `","max_tokens":100,` + s + `"system":[{"type":"text","text":"You are Claude Code."}],` +
				`"messages":[{"role":"user","content":"hi"},{"role":"system","content":"Reminder: be brief."},{"role":"user","content":"list files"}]}`
		}
		e.openai.Enqueue(ok)
		if resp := e.postTo(t, "/inf/v1/messages", claude(gptMini, false)); resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("system turn to an OpenAI-kind model: %d %s", resp.StatusCode, b)
		}
		msgs, _ := json.Marshal(e.openai.Last(t).Body["messages"])
		if !strings.Contains(string(msgs), `{"content":"Reminder: be brief.","role":"system"}`) {
			t.Fatalf("chat messages %s", msgs)
		}
		e.anthropic.Enqueue(ok)
		if resp := e.postTo(t, "/inf/v1/messages", claude(haiku, false)); resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("system turn to an Anthropic model: %d %s", resp.StatusCode, b)
		}
		sent := e.anthropic.Last(t).Body
		system, _ := json.Marshal(sent["system"])
		turns, _ := json.Marshal(sent["messages"])
		if !strings.Contains(string(system), "Reminder: be brief.") || !strings.Contains(string(system), "You are Claude Code.") || strings.Contains(string(turns), `"system"`) {
			t.Fatalf("folded: system %s, messages %s", system, turns)
		}

		// A tool result with an image: the text in the tool message, the
		// image in a user message after it.
		e.openai.Enqueue(ok)
		withImage := `{"model":"` + gptMini + `","max_tokens":100,"messages":[{"role":"user","content":"look"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"screenshot","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"taken"},` +
			`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}]}`
		if resp := e.postTo(t, "/inf/v1/messages", withImage); resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("tool result with an image: %d %s", resp.StatusCode, b)
		}
		msgs, _ = json.Marshal(e.openai.Last(t).Body["messages"])
		if !strings.Contains(string(msgs), `"content":"taken","role":"tool"`) || !strings.Contains(string(msgs), `data:image/png;base64,iVBORw0KGgo=`) {
			t.Fatalf("chat messages %s", msgs)
		}

		// message_start carries the input estimate when translated.
		e.openai.Enqueue(ok)
		resp := e.postTo(t, "/inf/v1/messages", claude(gptMini, true))
		b, _ := io.ReadAll(resp.Body)
		var start string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"type":"message_start"`) {
				start = line
			}
		}
		if resp.StatusCode != 200 || strings.Contains(start, `"input_tokens":0`) || !strings.Contains(start, `"input_tokens":`) {
			t.Fatalf("message_start: %d %s", resp.StatusCode, start)
		}

		// Required members, in Anthropic's error shape, with no upstream call.
		before := len(e.anthropic.Requests())
		for _, body := range []string{
			`{"model":"` + haiku + `","messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"` + haiku + `","max_tokens":10}`,
		} {
			resp := e.postTo(t, "/inf/v1/messages", body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(string(b), `"type":"invalid_request_error"`) || !strings.Contains(string(b), "Field required") {
				t.Fatalf("%s: %d %s", body, resp.StatusCode, b)
			}
		}
		if len(e.anthropic.Requests()) != before {
			t.Fatal("an incomplete request reached the upstream")
		}

		// Responses needs input (gw keeps no responses to stand in for it),
		// answered in OpenAI's shape.
		resp = e.postTo(t, "/inf/v1/responses", `{"model":"`+gptMini+`"}`)
		b, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"param":"input"`) || !strings.Contains(string(b), `"code":"missing_required_parameter"`) {
			t.Fatalf("responses without input: %d %s", resp.StatusCode, b)
		}
		if len(e.anthropic.Requests()) != before {
			t.Fatal("an incomplete request reached the upstream")
		}

		// Codex's hosted and namespace tools, to an Anthropic model.
		codex := `{"model":"` + haiku + `","input":"list files","tools":[` +
			`{"type":"function","name":"shell","parameters":{"type":"object","properties":{}}},` +
			`{"type":"web_search"},{"type":"namespace","name":"mcp_docs","tools":[]}]}`
		e.anthropic.Enqueue(ok)
		resp = e.postTo(t, "/inf/v1/responses", codex)
		b, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Dropped-Tools") != "web_search" || resp.Header.Get("X-Gw-Translated-Tools") != "mcp_docs" {
			t.Fatalf("codex tools: %d %q %s", resp.StatusCode, resp.Header.Get("X-Gw-Dropped-Tools"), b)
		}
		if tools, _ := json.Marshal(e.anthropic.Last(t).Body["tools"]); !strings.Contains(string(tools), `"shell"`) || strings.Contains(string(tools), "web_search") {
			t.Fatalf("tools sent %s", tools)
		}
		// Claude Code's server tools, to an OpenAI model: left out and named.
		e.openai.Enqueue(ok)
		resp = e.postTo(t, "/inf/v1/messages", `{"model":"`+gptMini+`","max_tokens":100,"messages":[{"role":"user","content":"hi"}],`+
			`"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}]}`)
		b, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Dropped-Tools") != "web_search_20250305" {
			t.Fatalf("server tools: %d %q %s", resp.StatusCode, resp.Header.Get("X-Gw-Dropped-Tools"), b)
		}
		if tools, _ := json.Marshal(e.openai.Last(t).Body["tools"]); !strings.Contains(string(tools), `"Bash"`) || strings.Contains(string(tools), "web_search") {
			t.Fatalf("tools sent %s", tools)
		}
		// Codex 0.169 on a model it does not know: its tools come as an
		// additional_tools input item of namespaces, flattened into
		// functions (TestCodexNamespacedTools).
		e.anthropic.Enqueue(ok)
		resp = e.postTo(t, "/inf/v1/responses", `{"model":"`+haiku+`","input":[{"type":"additional_tools","role":"developer",`+
			`"tools":[{"type":"namespace","name":"functions","tools":[]},{"type":"namespace","name":"clock","tools":[]}]},`+
			`{"role":"user","content":"hi"}]}`)
		b, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("X-Gw-Dropped-Tools") != "" || resp.Header.Get("X-Gw-Translated-Tools") != "functions, clock" {
			t.Fatalf("additional_tools: %d %q %s", resp.StatusCode, resp.Header.Get("X-Gw-Translated-Tools"), b)
		}
		e.policy(t, rule(all, `{"kind":"strict_parameters"}`))
		e.sync(t)
		resp = e.postTo(t, "/inf/v1/responses", codex)
		b, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"param":"tools[1].type"`) {
			t.Fatalf("strict: %d %s", resp.StatusCode, b)
		}
	})
}
