package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
)

func corsRequest(t *testing.T, method, url, origin string, header ...string) *http.Response {
	t.Helper()
	var body *strings.Reader
	if method == "POST" {
		body = strings.NewReader(mini)
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, url, body)
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestCORS: off by default; with --cors-origins, a listed origin's
// preflight is answered without a key, its real requests still need one,
// and other origins get no CORS headers.
func TestCORS(t *testing.T) {
	const app = "https://app.example.com"
	preflight := []string{"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type, x-stainless-os"}

	off := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, storetest.SQLite), Keyring: keyring(t)})
	resp := corsRequest(t, "OPTIONS", off.URL+"/inf/v1/chat/completions", app, preflight...)
	if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.StatusCode == http.StatusNoContent {
		t.Fatalf("CORS off: preflight answered %d %v", resp.StatusCode, resp.Header)
	}

	srv := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, storetest.SQLite), Keyring: keyring(t),
		CORSOrigins: []string{app}})
	up, token, _ := setupInference(t, srv.Owner)
	up.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 1, Output: 1}})
	for _, path := range []string{"/inf/v1/chat/completions", "/inf/v1/models", "/inf/v1/messages"} {
		resp = corsRequest(t, "OPTIONS", srv.URL+path, app, preflight...)
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != app ||
			!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
			h.Get("Access-Control-Allow-Headers") != "authorization, content-type, x-stainless-os" ||
			h.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("preflight %s: %d %v", path, resp.StatusCode, h)
		}
	}
	// The real request still needs its key, and says so readably.
	resp = corsRequest(t, "POST", srv.URL+"/inf/v1/chat/completions", app, "Content-Type", "application/json")
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("no key: %d %v", resp.StatusCode, resp.Header)
	}
	resp = corsRequest(t, "POST", srv.URL+"/inf/v1/chat/completions", app, "Authorization", "Bearer "+token, "Content-Type", "application/json")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != app ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id") {
		t.Errorf("with a key: %d %v", resp.StatusCode, resp.Header)
	}
	// Another origin: no CORS headers, its preflight is not answered.
	resp = corsRequest(t, "OPTIONS", srv.URL+"/inf/v1/chat/completions", "https://evil.example", preflight...)
	if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.StatusCode == http.StatusNoContent {
		t.Errorf("unlisted origin: %d %v", resp.StatusCode, resp.Header)
	}
	// gw's OAuth metadata, token and revocation endpoints, and the MCP
	// endpoint's resource metadata, are open to a listed origin (a
	// browser-based MCP client); the authorization page is not.
	for _, path := range []string{"/oauth/token", "/oauth/revoke", "/.well-known/oauth-authorization-server",
		"/.well-known/oauth-protected-resource/inf/v1/mcp"} {
		resp = corsRequest(t, "OPTIONS", srv.URL+path, app, preflight...)
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != app {
			t.Errorf("preflight %s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
	resp = corsRequest(t, "GET", srv.URL+"/.well-known/oauth-authorization-server", app)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("the authorization server metadata: %d %v", resp.StatusCode, resp.Header)
	}
	resp = corsRequest(t, "OPTIONS", srv.URL+"/oauth/authorize", app, preflight...)
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("/oauth/authorize preflight: %d %v", resp.StatusCode, resp.Header)
	}
	// The management API is not opened to other origins.
	resp = corsRequest(t, "OPTIONS", srv.URL+"/api/v1/auth/me", app, preflight...)
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("/api/v1 preflight: %d %v", resp.StatusCode, resp.Header)
	}
}
