package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

type oauthEchoIn struct {
	Text string `json:"text"`
}

// TestOAuthMCPTypeScriptSDK runs e2e/node/oauth-mcp.mjs: the MCP
// TypeScript SDK's OAuth client completes gw's authorization flow (a
// client identified by its Client ID Metadata Document, PKCE S256, the
// resource indicator, iss in the response) against gw serve, and calls a
// tool through /inf/v1/mcp with the access token it got; the tool call's
// usage event is the person's. The document is served over TLS on
// 127.0.0.1, which gw trusts through SSL_CERT_FILE and may fetch because
// the instance setting oauth_cimd_allow_private allows it.
func TestOAuthMCPTypeScriptSDK(t *testing.T) {
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	default:
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
			missing = "@modelcontextprotocol/sdk is not installed in e2e/node (run npm ci there)"
		}
	}
	if missing != "" {
		if os.Getenv("GW_TEST_REQUIRE_NODE") != "" {
			t.Fatal(missing + ", and GW_TEST_REQUIRE_NODE is set")
		}
		t.Skip(missing)
	}

	const redirect = "http://127.0.0.1:9/callback"
	var doc []byte
	cimd := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp-client.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	defer cimd.Close()
	clientID := cimd.URL + "/mcp-client.json"
	doc, _ = json.Marshal(map[string]any{"client_id": clientID, "client_name": "gw e2e MCP client", "redirect_uris": []string{redirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"})
	certFile := filepath.Join(t.TempDir(), "cimd.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cimd.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in oauthEchoIn) (*mcp.CallToolResult, any, error) {
		if in.Text == "" {
			return nil, nil, errors.New("no text")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	defer upstream.Close()

	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_oauth", "SSL_CERT_FILE="+certFile)
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_oauth", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path string, body any) []byte {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+boot.ManagementKey.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, buf.String())
		}
		return buf.Bytes()
	}
	call("PATCH", "/api/v1/instance/settings", map[string]any{"oauth_cimd_allow_private": true})
	call("POST", "/api/v1/organizations/default/workspaces/default/mcp-servers", map[string]any{"name": "up", "url": upstream.URL})
	call("PATCH", "/api/v1/organizations/default/workspaces/default", map[string]any{"mcp_default": "allow"})

	// The person's browser session.
	raw, _ := json.Marshal(map[string]any{"email": "ops@example.com", "password": "a long passphrase"})
	resp, err := http.Post(srv.URL+"/api/v1/auth/login", "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	session := ""
	for _, c := range resp.Cookies() {
		if c.Name == "svc_session" {
			session = c.Value
		}
	}
	if session == "" {
		t.Fatalf("login: %d, no session", resp.StatusCode)
	}

	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "oauth-mcp.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GW_URL="+srv.URL, "GW_SESSION="+session, "GW_CLIENT_ID="+clientID, "GW_REDIRECT="+redirect)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node oauth-mcp.mjs: %v\n%s\ngw serve:\n%s", err, out, srv.logs)
	}
	if !strings.Contains(string(out), `{"ok":true`) {
		t.Fatalf("node oauth-mcp.mjs printed no summary:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))

	// The tool call's usage event is the person's, with no inference key.
	waitFor(t, "the tool call's usage event", func() bool {
		var page wire.Page[wire.UsageEvent]
		b := call("GET", "/api/v1/organizations/default/usage-events", nil)
		if json.Unmarshal(b, &page) != nil || len(page.Data) != 1 {
			return false
		}
		e := page.Data[0]
		return e.OwnerID != nil && *e.OwnerID == boot.User.ID && e.InferenceKeyID == nil
	})
	// The grant the SDK's reused refresh token revoked, in the list.
	var grants wire.Envelope[[]wire.OAuthGrant]
	if err := json.Unmarshal(call("GET", "/api/v1/organizations/default/workspaces/default/oauth-grants", nil), &grants); err != nil ||
		len(grants.Data) != 1 || grants.Data[0].Status != wire.OAuthGrantRevoked || grants.Data[0].ClientID != clientID {
		t.Fatalf("grants: %+v %v", grants, err)
	}
}
