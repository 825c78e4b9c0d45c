package api_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/api"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// oauthEnv is the control plane and an in-process data plane behind one
// origin, as gw serve routes them, with a client's metadata document on a
// TLS server of its own.
type oauthEnv struct {
	*env
	gw      *httptest.Server
	sink    *usageSink
	cimd    *httptest.Server
	client  string // the document's URL: the client_id
	docs    map[string]string
	session string
}

const oauthRedirect = "http://127.0.0.1:9/callback"

func newOAuthEnv(t *testing.T, db *bun.DB) *oauthEnv {
	t.Helper()
	ctx := context.Background()
	key, err := secrets.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	kr := secrets.NewKeyring(key)
	st := store.New(db)
	signer, err := publish.SigningKey(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	o := &oauthEnv{sink: &usageSink{}, docs: map[string]string{}}
	o.cimd = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := o.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, doc)
	}))
	t.Cleanup(o.cimd.Close)
	o.client = o.cimd.URL + "/client.json"
	o.docs["/client.json"] = `{"client_id":"` + o.client + `","client_name":"Test MCP client","redirect_uris":["` + oauthRedirect + `"]}`
	o.docs["/big.json"] = `{"client_id":"` + o.cimd.URL + `/big.json","redirect_uris":["` + oauthRedirect + `"],"x":"` + strings.Repeat("x", 6000) + `"}`
	plane := dataplane.NewPlane(signer.Public().(ed25519.PublicKey), dataplane.Options{Keyring: kr, Usage: o.sink})
	refresher := &publish.Refresher{Compiler: &publish.Compiler{Store: st, Signer: signer}, Plane: plane, Store: st}
	o.env = newEnv(t, db, api.Options{Keyring: kr, Bundles: refresher, OAuthSigner: signer, OAuthRoots: poolOf(o.cimd)})
	if err := refresher.RefreshAll(ctx); err != nil {
		t.Fatal(err)
	}
	plane.MarkReady()
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", o.api)
	mux.Handle("/oauth/", o.api.OAuthHandler())
	mux.Handle(api.OAuthMetadataPath, o.api.OAuthHandler())
	mux.Handle("/inf/v1/", plane)
	mux.Handle(dataplane.MCPResourceMetadataPath, plane)
	o.gw = httptest.NewServer(mux)
	t.Cleanup(o.gw.Close)
	_, o.session = o.login("owner@example.com", "correct horse battery")
	return o
}

func poolOf(s *httptest.Server) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Certificate())
	return p
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// pkce is a verifier and its S256 challenge.
func pkce(seed string) (verifier, challenge string) {
	verifier = strings.Repeat(seed, 43/len(seed)+1)[:43]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func (o *oauthEnv) authorizeURL(clientID, challenge, method, resource, redirect string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"st-1"},
		"code_challenge": {challenge}, "code_challenge_method": {method}}
	if resource != "" {
		q.Set("resource", resource)
	}
	return o.gw.URL + "/oauth/authorize?" + q.Encode()
}

func (o *oauthEnv) get(u, session string) *http.Response {
	o.t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if session != "" {
		req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: session})
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		o.t.Fatal(err)
	}
	return resp
}

var (
	hiddenField = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)
	firstOption = regexp.MustCompile(`<option value="([0-9a-f-]{36})">`)
)

// consent opens the authorization request with the person's session and
// approves it on the consent page as the browser would post it; it
// returns the redirect back to the client.
func (o *oauthEnv) consent(u, session, decision string) *url.URL {
	o.t.Helper()
	resp := o.get(u, session)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		o.t.Fatalf("consent page: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), page)
	}
	form := url.Values{"decision": {decision}}
	for _, m := range hiddenField.FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	ws := firstOption.FindStringSubmatch(string(page))
	if ws == nil {
		o.t.Fatalf("no workspace offered: %s", page)
	}
	form.Set("workspace", ws[1])
	req, _ := http.NewRequest("POST", o.gw.URL+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: session})
	resp, err := noRedirect.Do(req)
	if err != nil {
		o.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		o.t.Fatalf("consent post: %d %s", resp.StatusCode, body)
	}
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		o.t.Fatal(err)
	}
	return back
}

// token posts to the token endpoint; it returns the status and the body.
func (o *oauthEnv) token(form url.Values) (int, map[string]any) {
	o.t.Helper()
	resp, err := http.PostForm(o.gw.URL+"/oauth/token", form)
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (o *oauthEnv) codeFor(verifierSeed, resource string) (code, verifier string) {
	o.t.Helper()
	verifier, challenge := pkce(verifierSeed)
	back := o.consent(o.authorizeURL(o.client, challenge, "S256", resource, oauthRedirect), o.session, "approve")
	if back.Query().Get("iss") != o.gw.URL || back.Query().Get("state") != "st-1" || back.Query().Get("code") == "" {
		o.t.Fatalf("the authorization response: %s", back)
	}
	return back.Query().Get("code"), verifier
}

func (o *oauthEnv) redeem(code, verifier string) (int, map[string]any) {
	return o.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {o.client}, "redirect_uri": {oauthRedirect}})
}

// mcpStatus is the HTTP status of an MCP initialize with token.
func (o *oauthEnv) mcpStatus(path, token string) int {
	o.t.Helper()
	req, _ := http.NewRequest("POST", o.gw.URL+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize",`+
		`"params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		o.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The whole flow on both databases, an MCP client's view: discovery
// through the protected resource metadata and the authorization server's
// metadata; /oauth/authorize sends a person without a session to the
// sign-in page and back, then consent with the workspace; the code and
// PKCE give tokens bound to the MCP endpoint; the Go SDK lists and calls
// a tool with the access token, the tool call's usage event the person's;
// the refresh token rotates and a reused one revokes the grant; a
// replayed code revokes its grant; revocation stops the token; a disabled
// person's token stops at the next bundle; and every refusal is OAuth's
// error with an audit row.
func TestOAuthAuthorizationServerFlow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		o := newOAuthEnv(t, db)
		ctx := context.Background()
		// The client's document is on 127.0.0.1: allowed by the setting only.
		verifier, challenge := pkce("abc")
		resp := o.get(o.authorizeURL(o.client, challenge, "S256", "", oauthRedirect), o.session)
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(page), "oauth_cimd_allow_private") {
			t.Fatalf("a private document without the setting: %d %s", resp.StatusCode, page)
		}
		if a := o.lastAudit("oauth.refused"); a == nil || !strings.Contains(string(mustJSON(t, a)), "invalid_client") {
			t.Fatalf("the refusal's audit row: %+v", a)
		}
		settings := decodeData[wire.InstanceSettings](t, o.must("PATCH", "/api/v1/instance/settings", o.ownerKey, map[string]any{"oauth_cimd_allow_private": true}))
		if !settings.OAuthCIMDAllowPrivate {
			t.Fatalf("settings: %+v", settings)
		}

		// Discovery.
		prm := o.get(o.gw.URL+"/.well-known/oauth-protected-resource/inf/v1/mcp", "")
		var prmDoc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		_ = json.NewDecoder(prm.Body).Decode(&prmDoc)
		prm.Body.Close()
		if prmDoc.Resource != o.gw.URL+"/inf/v1/mcp" || len(prmDoc.AuthorizationServers) != 1 || prmDoc.AuthorizationServers[0] != o.gw.URL {
			t.Fatalf("protected resource metadata: %+v", prmDoc)
		}
		asm := o.get(o.gw.URL+"/.well-known/oauth-authorization-server", "")
		var asDoc map[string]any
		_ = json.NewDecoder(asm.Body).Decode(&asDoc)
		asm.Body.Close()
		if asDoc["issuer"] != o.gw.URL || asDoc["token_endpoint"] != o.gw.URL+"/oauth/token" || asDoc["client_id_metadata_document_supported"] != true ||
			asDoc["authorization_response_iss_parameter_supported"] != true || mustString(asDoc["code_challenge_methods_supported"]) != `["S256"]` {
			t.Fatalf("authorization server metadata: %v", asDoc)
		}

		// No session: to the sign-in page, and back to this request.
		resp = o.get(o.authorizeURL(o.client, challenge, "S256", "", oauthRedirect), "")
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/signin?next=%2Foauth%2Fauthorize%3F") {
			t.Fatalf("without a session: %d %s", resp.StatusCode, loc)
		}
		// Refused before consent: plain PKCE, no PKCE (back at the client);
		// another redirect URI (on a page, never redirected).
		for _, c := range []struct{ challenge, method, redirect, want string }{
			{verifier, "plain", oauthRedirect, "invalid_request"},
			{"", "", oauthRedirect, "invalid_request"},
			{challenge, "S256", "http://127.0.0.1:9/elsewhere", "page"},
		} {
			resp := o.get(o.authorizeURL(o.client, c.challenge, c.method, "", c.redirect), o.session)
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			switch {
			case c.want == "page" && resp.StatusCode != http.StatusBadRequest:
				t.Fatalf("%+v: %d %s", c, resp.StatusCode, loc)
			case c.want != "page" && (resp.StatusCode != http.StatusFound || loc.Query().Get("error") != c.want || loc.Query().Get("iss") != o.gw.URL):
				t.Fatalf("%+v: %d %s", c, resp.StatusCode, loc)
			}
		}
		// A document too large.
		resp = o.get(o.authorizeURL(o.cimd.URL+"/big.json", challenge, "S256", "", oauthRedirect), o.session)
		page, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(page), "larger than 5120 bytes") {
			t.Fatalf("a document too large: %d %s", resp.StatusCode, page)
		}

		// Consent, code, tokens.
		code, verifier := o.codeFor("xyz", o.gw.URL+"/inf/v1/mcp")
		if st, out := o.redeem(code, "wrong-verifier-"+verifier); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("a wrong verifier: %d %v", st, out)
		}
		code, verifier = o.codeFor("xyz", o.gw.URL+"/inf/v1/mcp")
		st, tok := o.redeem(code, verifier)
		if st != 200 || tok["token_type"] != "Bearer" || tok["expires_in"] != float64(600) {
			t.Fatalf("the code's tokens: %d %v", st, tok)
		}
		access, refresh := tok["access_token"].(string), tok["refresh_token"].(string)

		// The MCP endpoint with the access token: the person's tool call.
		up := mcpUpstream(t)
		o.must("POST", wsBase+"/mcp-servers", o.ownerKey, map[string]any{"name": "up", "url": up.URL})
		o.must("PATCH", wsBase, o.ownerKey, map[string]any{"mcp_default": "allow"})
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: o.gw.URL + "/inf/v1/mcp", HTTPClient: &http.Client{Transport: bearer{access}},
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		list, err := cs.ListTools(ctx, nil)
		if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "up.echo" && list.Tools[0].Name != "up__echo" && !strings.Contains(list.Tools[0].Name, "echo") {
			t.Fatalf("tools/list: %+v %v", list, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: list.Tools[0].Name, Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call: %+v %v", res, err)
		}
		o.sink.mu.Lock()
		events := append([]wire.UsageEventIn{}, o.sink.events...)
		o.sink.mu.Unlock()
		if len(events) != 1 || events[0].OwnerID == nil || *events[0].OwnerID != o.boot.User.ID || events[0].InferenceKeyID != nil {
			t.Fatalf("the tool call's usage event: %+v", events)
		}
		// Bound to the MCP endpoint: refused at another /inf/v1 endpoint.
		req, _ := http.NewRequest("GET", o.gw.URL+"/inf/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+access)
		resp, _ = http.DefaultClient.Do(req)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the MCP token at /inf/v1/models: %d", resp.StatusCode)
		}

		// Refresh rotation: the new one works, the old one is a replay that
		// revokes the grant and stops its access tokens.
		st, tok2 := o.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {o.client}})
		if st != 200 || tok2["refresh_token"] == refresh {
			t.Fatalf("refresh: %d %v", st, tok2)
		}
		if s := o.mcpStatus("/inf/v1/mcp", tok2["access_token"].(string)); s != 200 {
			t.Fatalf("the refreshed token: %d", s)
		}
		st, out := o.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {o.client}})
		if st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("a reused refresh token: %d %v", st, out)
		}
		if s := o.mcpStatus("/inf/v1/mcp", tok2["access_token"].(string)); s != 401 {
			t.Fatalf("a token of the revoked grant: %d", s)
		}
		if st, out := o.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok2["refresh_token"].(string)}, "client_id": {o.client}}); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("the newest refresh token of a revoked grant: %d %v", st, out)
		}
		if a := o.lastAudit("oauth.refresh_replayed"); a == nil {
			t.Fatal("no audit row for the reused refresh token")
		}

		// A replayed code: refused, and the tokens it gave stop.
		code, verifier = o.codeFor("rep", o.gw.URL+"/inf/v1")
		st, tok = o.redeem(code, verifier)
		if st != 200 {
			t.Fatalf("redeem: %d %v", st, tok)
		}
		if s := o.mcpStatus("/inf/v1/mcp", tok["access_token"].(string)); s != 200 {
			t.Fatalf("an /inf/v1 token at the MCP endpoint: %d", s)
		}
		if st, out := o.redeem(code, verifier); st != 400 || out["error"] != "invalid_grant" {
			t.Fatalf("a replayed code: %d %v", st, out)
		}
		if s := o.mcpStatus("/inf/v1/mcp", tok["access_token"].(string)); s != 401 {
			t.Fatalf("a token of a replayed code: %d", s)
		}

		// Revocation by the client (RFC 7009).
		code, verifier = o.codeFor("rev", "")
		_, tok = o.redeem(code, verifier)
		resp, _ = http.PostForm(o.gw.URL+"/oauth/revoke", url.Values{"token": {tok["access_token"].(string)}, "client_id": {o.client}})
		resp.Body.Close()
		if resp.StatusCode != 200 || o.mcpStatus("/inf/v1/mcp", tok["access_token"].(string)) != 401 {
			t.Fatalf("revoked: %d", resp.StatusCode)
		}

		// An administrator's grant list and revocation.
		code, verifier = o.codeFor("adm", "")
		_, tok = o.redeem(code, verifier)
		grants := decodeData[[]wire.OAuthGrant](t, o.must("GET", wsBase+"/oauth-grants", o.ownerKey, nil))
		if len(grants) != 5 || grants[0].Status != wire.OAuthGrantActive || grants[0].ClientID != o.client || grants[0].UserID != o.boot.User.ID ||
			grants[1].Status != wire.OAuthGrantRevoked {
			t.Fatalf("grants: %+v", grants)
		}
		revoked := decodeData[wire.OAuthGrant](t, o.must("POST", wsBase+"/oauth-grants/"+grants[0].ID.String()+"/revoke", o.ownerKey, nil))
		if revoked.Status != wire.OAuthGrantRevoked || o.mcpStatus("/inf/v1/mcp", tok["access_token"].(string)) != 401 {
			t.Fatalf("revoked by an administrator: %+v", revoked)
		}

		// A disabled person's token stops at the next bundle.
		member, memberSession := o.signup("ada@example.com")
		o.must("POST", "/api/v1/organizations/default/members", o.ownerKey, map[string]any{"user_id": member.User.ID, "role": "member"})
		o.must("POST", wsBase+"/members", o.ownerKey, map[string]any{"user_id": member.User.ID, "role": "admin"})
		verifier, challenge = pkce("ada")
		back := o.consent(o.authorizeURL(o.client, challenge, "S256", "", oauthRedirect), memberSession, "approve")
		_, tok = o.redeem(back.Query().Get("code"), verifier)
		if s := o.mcpStatus("/inf/v1/mcp", tok["access_token"].(string)); s != 200 {
			t.Fatalf("the member's token: %d", s)
		}
		// A policy targeting selected_users naming the member (here a tool
		// policy, which decides tool calls) applies to their token's tool
		// call, and not to the owner's.
		o.must("POST", wsBase+"/tool-policies", o.ownerKey, map[string]any{"name": "not-ada", "enabled": true, "definition": map[string]any{
			"target": map[string]any{"kind": "selected_users", "user_ids": []string{member.User.ID.String()}},
			"rules": []map[string]any{{"match": map[string]any{"servers": []string{"up"}}, "phase": "call",
				"action": map[string]any{"kind": "deny", "message": "not for ada"}}}}})
		callAs := func(token string) (*mcp.CallToolResult, error) {
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: o.gw.URL + "/inf/v1/mcp", HTTPClient: &http.Client{Transport: bearer{token}},
				DisableStandaloneSSE: true, MaxRetries: -1}, nil)
			if err != nil {
				return nil, err
			}
			defer cs.Close()
			return cs.CallTool(ctx, &mcp.CallToolParams{Name: list.Tools[0].Name, Arguments: map[string]any{"text": "hi"}})
		}
		if res, err := callAs(tok["access_token"].(string)); err == nil && !res.IsError {
			t.Fatalf("the member's tool call under a policy denying them: %+v", res)
		} else if err != nil && !strings.Contains(err.Error(), "not for ada") || err == nil && !strings.Contains(mustString(res.Content), "not for ada") {
			t.Fatalf("the refusal does not name the policy: %+v %v", res, err)
		}
		code, verifier = o.codeFor("own", "")
		_, own := o.redeem(code, verifier)
		if res, err := callAs(own["access_token"].(string)); err != nil || res.IsError {
			t.Fatalf("the owner's tool call: %+v %v", res, err)
		}
		o.must("POST", "/api/v1/instance/users/"+member.User.ID.String()+"/disable", o.ownerKey, nil)
		if s := o.mcpStatus("/inf/v1/mcp", tok["access_token"].(string)); s != 401 {
			t.Fatalf("a disabled person's token: %d", s)
		}

		// Registered clients: a confidential one authenticates with its
		// secret (client_secret_basic); a wrong one is invalid_client.
		cl := decodeData[wire.OAuthClient](t, o.must("POST", "/api/v1/instance/oauth-clients", o.ownerKey,
			map[string]any{"name": "gw CLI", "redirect_uris": []string{oauthRedirect}, "confidential": true}))
		if cl.ClientSecret == "" || !cl.Confidential {
			t.Fatalf("registered: %+v", cl)
		}
		verifier, challenge = pkce("cli")
		back = o.consent(o.authorizeURL(cl.ClientID, challenge, "S256", "", oauthRedirect), o.session, "approve")
		tokenReq := func(secret string) (int, map[string]any) {
			form := url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "code_verifier": {verifier}, "redirect_uri": {oauthRedirect}}
			req, _ := http.NewRequest("POST", o.gw.URL+"/oauth/token", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(cl.ClientID, secret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			return resp.StatusCode, out
		}
		if st, out := tokenReq("gwcs_wrong"); st != 401 || out["error"] != "invalid_client" {
			t.Fatalf("a wrong client secret: %d %v", st, out)
		}
		if st, out := tokenReq(cl.ClientSecret); st != 200 || out["access_token"] == nil {
			t.Fatalf("a confidential client's token: %d %v", st, out)
		}
		if list := decodeData[[]wire.OAuthClient](t, o.must("GET", "/api/v1/instance/oauth-clients", o.ownerKey, nil)); len(list) != 1 || list[0].ClientSecret != "" {
			t.Fatalf("clients: %+v", list)
		}
		o.must("DELETE", "/api/v1/instance/oauth-clients/"+cl.ClientID, o.ownerKey, nil)
		if st, _ := o.do("DELETE", "/api/v1/instance/oauth-clients/"+cl.ClientID, o.ownerKey, nil); st != 404 {
			t.Fatalf("a deleted client again: %d", st)
		}
		// Unknown grant types and codes: OAuth's errors, never a 500.
		for _, form := range []url.Values{
			{"grant_type": {"password"}, "client_id": {o.client}},
			{"grant_type": {"authorization_code"}, "code": {"gwo_ac_nope"}, "code_verifier": {verifier}, "client_id": {o.client}},
			{"grant_type": {"refresh_token"}, "refresh_token": {"gwo_rt_nope"}, "client_id": {o.client}},
			{"grant_type": {"authorization_code"}, "code": {"x"}, "code_verifier": {verifier}},
		} {
			if st, out := o.token(form); st >= 500 || out["error"] == nil {
				t.Fatalf("%v: %d %v", form, st, out)
			}
		}
	})
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

type echoIn struct {
	Text string `json:"text"`
}

// mcpUpstream is a Go SDK MCP server on 127.0.0.1 with an echo tool.
func mcpUpstream(t *testing.T) *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		if in.Text == "" {
			return nil, nil, errors.New("no text")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

func mustString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
