package mcpgw_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server/mcpgw"
)

// FuzzServe feeds the endpoint arbitrary bodies and headers (a caller's
// input is untrusted): every answer is a JSON-RPC message or an empty
// 202/204, never a panic or a 500.
func FuzzServe(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, "", "")
	f.Add(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x__y","arguments":{"a":1}}}`, "2026-07-28", "tools/call")
	f.Add(`[{"jsonrpc":"2.0"}]`, "", "")
	f.Add(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "2025-11-25", "")
	gw := mcpgw.New(mcpgw.Options{HTTP: &http.Client{}})
	g := &guard{allow: true}
	f.Fuzz(func(t *testing.T, body, version, method string) {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		if version != "" {
			r.Header.Set("MCP-Protocol-Version", version)
		}
		if method != "" {
			r.Header.Set("Mcp-Method", method)
		}
		w := httptest.NewRecorder()
		gw.Serve(w, r, nil, g, "", bearer)
		switch w.Code {
		case http.StatusAccepted, http.StatusNoContent:
			return
		case http.StatusInternalServerError:
			t.Fatalf("500 for %q: %s", body, w.Body)
		}
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("%d %q for %q", w.Code, w.Body, body)
		}
	})
}
