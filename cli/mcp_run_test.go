package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type mcpRunEchoIn struct {
	Text string `json:"text"`
}

// mcpRunUpstream is a Go SDK MCP server on 127.0.0.1 with a text tool and
// one whose result is an error.
func mcpRunUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text."}, func(_ context.Context, _ *mcp.CallToolRequest, in mcpRunEchoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "oops"}, func(_ context.Context, _ *mcp.CallToolRequest, _ mcpRunEchoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

// gw mcp tools and gw mcp call against the real management API and data
// plane: deny by default (no tools, a refused call), then what a list rule
// and a call rule let the key see and call, on the aggregated endpoint and
// on one server's; a tool's error result exits 1; a wrong key exits 4; a
// call leaves its usage event like any other.
func TestMCPToolsAndCallRun(t *testing.T) {
	e := newResEnv(t)
	up := mcpRunUpstream(t)
	e.ok("mcp", "servers", "add", "up", "--url", up.URL, "--price", "echo=0.002")
	token := strings.TrimSpace(e.code(ExitOK, "", "inference-keys", "create", "--name", "app", "--expires-in", "90d").out)

	// Deny by default.
	if got := decodeJSONOut[[]map[string]any](t, e.ok("mcp", "tools", "--key", token, "-o", "json")); len(got) != 0 {
		t.Fatalf("deny by default listed %v", got)
	}
	r := e.code(ExitError, "", "mcp", "call", "up", "echo", "--arguments", `{"text":"hi"}`, "--key", token)
	mustContain(t, "refused call", r.errOut, "no tool policy allows this tool")

	file := filepath.Join(t.TempDir(), "tp.json")
	if err := os.WriteFile(file, []byte(`{"tool_policies":[{"name":"all","enabled":true,"definition":{"target":{"kind":"workspace"},"rules":[
		{"match":{"servers":["up"]},"phase":"list","action":{"kind":"allow"}},
		{"match":{"servers":["up"],"tools":["echo","oops"]},"phase":"call","action":{"kind":"allow"}},
		{"match":{"servers":["up"],"tools":["echo"],"arguments":{"/text":{"prefix":"secret"}}},"phase":"call","action":{"kind":"deny","message":"no secrets"}}]}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.ok("tool-policies", "apply", "-f", file)

	rows := tableRows(e.ok("mcp", "tools", "--key", token))
	if len(rows) != 2 || rows[0][0] != "up__echo" || rows[0][2] != "Echoes its text." || rows[1][0] != "up__oops" {
		t.Fatalf("aggregated tools %v", rows)
	}
	t.Setenv("GW_INFERENCE_KEY", token)
	one := decodeJSONOut[[]map[string]any](t, e.ok("mcp", "tools", "--server", "up", "-o", "json"))
	if len(one) != 2 || one[0]["name"] != "echo" {
		t.Fatalf("one server's tools %v", one)
	}
	if out := e.ok("mcp", "call", "up", "echo", "--arguments", `{"text":"hi"}`); out != "echo: hi\n" {
		t.Fatalf("call printed %q", out)
	}
	res := decodeJSONOut[map[string]any](t, e.ok("mcp", "call", "up", "echo", "--arguments", `{"text":"j"}`, "-o", "json"))
	if c, _ := res["content"].([]any); len(c) != 1 || c[0].(map[string]any)["text"] != "echo: j" {
		t.Fatalf("call json %v", res)
	}
	r = e.code(ExitError, "", "mcp", "call", "up", "oops", "--arguments", `{"text":"x"}`)
	mustContain(t, "error result", r.out+r.errOut, "it broke", "answered an error")

	e.code(ExitUsage, "", "mcp", "call", "up", "echo", "--arguments", `[1]`)
	e.code(ExitAuth, "", "mcp", "tools", "--key", "sk-gw-wrong")

	// The tool form of gw policies explain decides as the data plane does:
	// the key by name, list and call, the arguments tested by call rules.
	out := e.ok("policies", "explain", "--key", "app", "--server", "up", "--tool", "echo", "--arguments", `{"text":"hi"}`)
	mustContain(t, "explain allowed", out, "server:      organization default's; $0.002000000 a call", "mcp_default: deny",
		"list:        allowed by rule all#1", "call:        allowed by rule all#2")
	out = e.ok("policies", "explain", "--key", "app", "--server", "up", "--tool", "echo", "--arguments", `{"text":"secret 1"}`)
	mustContain(t, "explain denied by arguments", out, "list:        allowed by rule all#1", "call:        denied by rule all#3 — no secrets")
	x := decodeJSONOut[map[string]any](t, e.ok("policies", "explain", "--key", "app", "--server", "up", "--tool", "other", "-o", "json"))
	if l := x["list"].(map[string]any); l["allowed"] != true || x["call"].(map[string]any)["allowed"] != false {
		t.Fatalf("explain of a tool no call rule names %v", x)
	}
	mustContain(t, "explain unknown server", e.ok("policies", "explain", "--key", "app", "--server", "nope", "--tool", "echo"),
		"none named nope in force", "list:        denied by the server")
	e.code(ExitUsage, "", "policies", "explain", "--key", "app", "--server", "up", "--tool", "echo", "--model", "x")
	e.code(ExitUsage, "", "policies", "explain", "--key", "app", "--server", "up", "--tool", "echo", "--arguments", "nope")
	r = e.code(ExitError, "", "mcp", "call", "up", "echo", "--arguments", `{"text":"secret 1"}`)
	mustContain(t, "refused by arguments", r.errOut, "no secrets")

	t.Setenv("GW_INFERENCE_KEY", "")
	e.code(ExitUsage, "", "mcp", "tools")

	// Each call is metered: the usage events of the refused call, the two
	// echoes and the error result (status error, its price charged).
	var got []string
	for _, ev := range e.usage.all() {
		got = append(got, ev.Model+" "+ev.Status)
	}
	if want := "mcp/up/echo denied,mcp/up/echo ok,mcp/up/echo ok,mcp/up/oops error,mcp/up/echo denied"; strings.Join(got, ",") != want {
		t.Fatalf("usage events %v, want %s", got, want)
	}
}
