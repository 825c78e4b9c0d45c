package mcpgw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gw-gateway/gw/server/mcpgw"
)

// askingUpstream is an MCP server that, like the conformance suite's
// sampling tool, asks its client for an LLM completion in the middle of
// a tools/call (a sampling/createMessage request in the call's event
// stream) and waits for the answer before it returns the result, which
// says what the answer was. replies receives each answer it got, with the
// headers it came with.
func askingUpstream(t *testing.T) (*httptest.Server, chan *http.Request) {
	t.Helper()
	replies := make(chan *http.Request, 4)
	answers := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if r.Header.Get("X-Api-Key") != "up-secret" || json.NewDecoder(r.Body).Decode(&m) != nil {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		respond := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
		}
		switch {
		case m.Method == "" && m.Error != nil:
			// gw's answer to the sampling request.
			replies <- r
			answers <- fmt.Sprintf("%s %d %s", m.ID, m.Error.Code, m.Error.Message)
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "initialize":
			respond(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"asking","version":"1"}}`)
		case len(m.ID) == 0:
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "tools/list":
			respond(`{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}`)
		case m.Method == "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Mcp-Session-Id", "s-1")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"sampling-1\",\"method\":\"sampling/createMessage\","+
				"\"params\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}],\"maxTokens\":10}}\n\n")
			w.(http.Flusher).Flush()
			got := "no answer"
			select {
			case got = <-answers:
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
				return
			}
			res, _ := json.Marshal(map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "sampling: " + got}}})
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n\n", m.ID, res)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, m.ID)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, replies
}

// An upstream's request in a call's stream (sampling, elicitation) is
// answered at once with -32601 on the upstream's session and with its
// own auth, so the upstream finishes the call instead of waiting for
// gw's timeout.
func TestUpstreamRequestsAnsweredAtOnce(t *testing.T) {
	up, replies := askingUpstream(t)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "asking", URL: up.URL,
		Auth: mcpgw.Auth{Kind: "header", Header: "X-Api-Key", Secret: "up-secret"}}}, policies: allowAll(t, "")}
	gw := gateway(t, g, 30*time.Second)
	cs := connect(t, gw.URL+"/mcp/asking", "2025-11-25")
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("the call took %s: the upstream waited for an answer", took)
	}
	want := `sampling: "sampling-1" -32601 gw's MCP gateway relays no server-to-client requests (sampling/createMessage)`
	if !res.IsError || text(res) != want {
		t.Fatalf("result %q, want %q", text(res), want)
	}
	r := <-replies
	if r.Header.Get("Mcp-Session-Id") != "s-1" || r.Header.Get("MCP-Protocol-Version") != "2025-11-25" ||
		strings.Contains(r.Header.Get("Authorization"), "sk-gw-") {
		t.Fatalf("the answer came with %v", r.Header)
	}
}
