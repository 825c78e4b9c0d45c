package oauth_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/oauth"
)

func claims() oauth.Claims {
	now := time.Now()
	return oauth.Claims{Grant: uuid.New(), Org: uuid.New(), Workspace: uuid.New(), Subject: uuid.New(),
		Audience: "https://gw.example.com/inf/v1/mcp", ClientID: "https://app.example.com/client.json",
		IssuedAt: now.Unix(), Expires: now.Add(oauth.AccessTokenTTL).Unix()}
}

// An access token verifies with the key that signed it, and with no
// other; a changed byte, a token past its expiry, another prefix, or a
// bundle's signature (same key, another context) is refused.
func TestAccessTokenSignature(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	otherPub, _, _ := ed25519.GenerateKey(nil)
	c := claims()
	tok, err := oauth.SignAccessToken(priv, c)
	if err != nil || !strings.HasPrefix(tok, oauth.AccessTokenPrefix) {
		t.Fatalf("%q %v", tok, err)
	}
	got, err := oauth.VerifyAccessToken(pub, tok, time.Now())
	if err != nil || got.Grant != c.Grant || got.Audience != c.Audience || got.Subject != c.Subject || got.ID == "" {
		t.Fatalf("verify: %+v %v", got, err)
	}
	if _, err := oauth.VerifyAccessToken(otherPub, tok, time.Now()); !errors.Is(err, oauth.ErrBadToken) {
		t.Fatalf("another key: %v", err)
	}
	if _, err := oauth.VerifyAccessToken(pub, tok, time.Now().Add(oauth.AccessTokenTTL)); !errors.Is(err, oauth.ErrExpiredToken) {
		t.Fatalf("expired: %v", err)
	}
	payload, sig, _ := strings.Cut(strings.TrimPrefix(tok, oauth.AccessTokenPrefix), ".")
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	forged := strings.Replace(string(raw), c.Subject.String(), uuid.NewString(), 1)
	for name, bad := range map[string]string{
		"another subject":  oauth.AccessTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + sig,
		"no signature":     oauth.AccessTokenPrefix + payload,
		"another prefix":   "sk-gw-" + payload + "." + sig,
		"bundle signature": oauth.AccessTokenPrefix + payload + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(priv, raw)),
		"not base64":       oauth.AccessTokenPrefix + "!!." + sig,
		"too long":         oauth.AccessTokenPrefix + strings.Repeat("A", 5000) + "." + sig,
	} {
		if _, err := oauth.VerifyAccessToken(pub, bad, time.Now()); !errors.Is(err, oauth.ErrBadToken) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzVerifyAccessToken(f *testing.F) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	tok, _ := oauth.SignAccessToken(priv, claims())
	f.Add(tok)
	f.Add(oauth.AccessTokenPrefix + "e30.AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := oauth.VerifyAccessToken(pub, s, time.Now())
		if err == nil && s != tok {
			t.Fatalf("accepted %q as %+v", s, c)
		}
	})
}

func TestPKCE(t *testing.T) {
	verifier := strings.Repeat("a1-._~", 8)
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	if !oauth.ChallengeOK(challenge) || !oauth.PKCEMatches(verifier, challenge) {
		t.Fatal("the S256 pair")
	}
	for _, v := range []string{verifier + "x", "short", strings.Repeat("a", 129), strings.Repeat("a", 42) + "+"} {
		if oauth.PKCEMatches(v, challenge) {
			t.Errorf("verifier %q matched", v)
		}
	}
	// plain: the verifier as its own challenge is no S256 challenge.
	if oauth.ChallengeOK(verifier) || oauth.PKCEMatches(verifier, verifier) {
		t.Error("plain accepted")
	}
}

func TestResourcesAndAudiences(t *testing.T) {
	for in, want := range map[string]string{
		"https://gw.example.com/inf/v1/mcp":   "https://gw.example.com/inf/v1/mcp",
		"https://GW.example.com/inf/v1/mcp/":  "https://gw.example.com/inf/v1/mcp",
		"http://127.0.0.1:8080/inf/v1":        "http://127.0.0.1:8080/inf/v1",
		"https://gw.example.com/api/v1":       "",
		"https://gw.example.com/inf/v1/mcp#x": "",
		"https://u:p@gw.example.com/inf/v1":   "",
		"gw.example.com/inf/v1":               "",
		"https://gw.example.com/inf/v1?x=1":   "",
	} {
		got, ok := oauth.NormalizeResource(in)
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q %v", in, got, ok)
		}
	}
	cases := []struct {
		aud, origin, path string
		ok                bool
	}{
		{"https://gw.example.com/inf/v1/mcp", "https://gw.example.com", "/inf/v1/mcp", true},
		{"https://gw.example.com/inf/v1/mcp", "https://gw.example.com", "/inf/v1/mcp/github", true},
		{"https://gw.example.com/inf/v1/mcp", "https://gw.example.com", "/inf/v1/chat/completions", false},
		{"https://gw.example.com/inf/v1", "https://gw.example.com", "/inf/v1/chat/completions", true},
		{"https://gw.example.com/inf/v1", "https://gw.example.com", "/inf/v1/mcp", true},
		{"https://gw.example.com/inf/v1/mcp", "https://other.example.com", "/inf/v1/mcp", false},
		{"https://gw.example.com/inf/v1/mcp", "http://gw.example.com", "/inf/v1/mcp", false},
	}
	for _, c := range cases {
		if got := oauth.AudienceAccepts(c.aud, c.origin, c.path); got != c.ok {
			t.Errorf("%+v: %v", c, got)
		}
	}
	for uri, ok := range map[string]bool{
		"https://app.example.com/cb": true, "http://127.0.0.1:8123/cb": true, "http://localhost/cb": true, "com.example.app:/cb": true,
		"http://app.example.com/cb": false, "https://app.example.com/cb#f": false, "javascript:alert(1)": false, "cb": false,
	} {
		if oauth.RedirectURIOK(uri) != ok {
			t.Errorf("redirect URI %s: want %v", uri, ok)
		}
	}
}

// Client ID Metadata Documents: fetched over TLS through the egress
// dialer; a private address refused unless allowed, a document too
// large, too slow, naming another client_id, without redirect_uris or
// asking for a secret refused as invalid_client, never followed
// elsewhere.
func TestFetchClientMetadata(t *testing.T) {
	docs := map[string]string{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow.json" {
			time.Sleep(500 * time.Millisecond)
		}
		if r.URL.Path == "/moved.json" {
			http.Redirect(w, r, "/ok.json", http.StatusFound)
			return
		}
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(doc))
	}))
	defer srv.Close()
	u := func(p string) string { return srv.URL + p }
	docs["/ok.json"] = `{"client_id":"` + u("/ok.json") + `","client_name":"App","redirect_uris":["http://127.0.0.1:9/cb"]}`
	docs["/big.json"] = `{"client_id":"` + u("/big.json") + `","redirect_uris":["http://127.0.0.1:9/cb"],"pad":"` + strings.Repeat("x", oauth.CIMDMaxBytes) + `"}`
	docs["/other.json"] = `{"client_id":"https://evil.example.com/c.json","redirect_uris":["http://127.0.0.1:9/cb"]}`
	docs["/none.json"] = `{"client_id":"` + u("/none.json") + `"}`
	docs["/secret.json"] = `{"client_id":"` + u("/secret.json") + `","redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"client_secret_basic"}`
	docs["/slow.json"] = docs["/ok.json"]

	// The TLS server's client trusts its certificate; dial it through egress.
	allow := oauth.NewCIMDClient(func() egress.Policy { return egress.Policy{} }, nil)
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.DialContext = egress.NewDialer(func() egress.Policy { return egress.Policy{} }).DialContext
	allow.Transport = tr
	deny := &http.Client{Transport: tr.Clone(), Timeout: allow.Timeout, CheckRedirect: allow.CheckRedirect}
	deny.Transport.(*http.Transport).DialContext = egress.NewDialer(func() egress.Policy { return egress.Policy{DenyPrivate: true} }).DialContext
	ctx := context.Background()

	m, err := oauth.FetchClientMetadata(ctx, allow, u("/ok.json"))
	if err != nil || m.ClientName != "App" || m.RedirectURIs[0] != "http://127.0.0.1:9/cb" {
		t.Fatalf("ok: %+v %v", m, err)
	}
	slow := &http.Client{Transport: tr, Timeout: 200 * time.Millisecond, CheckRedirect: allow.CheckRedirect}
	for name, c := range map[string]struct {
		hc   *http.Client
		url  string
		want string
	}{
		"private":   {deny, u("/ok.json"), "oauth_cimd_allow_private"},
		"too large": {allow, u("/big.json"), "larger than 5120 bytes"},
		"other id":  {allow, u("/other.json"), "not the URL it was fetched from"},
		"no uris":   {allow, u("/none.json"), "no redirect_uris"},
		"secret":    {allow, u("/secret.json"), "not supported"},
		"missing":   {allow, u("/missing.json"), "HTTP 404"},
		"redirect":  {allow, u("/moved.json"), "HTTP 302"},
		"timeout":   {slow, u("/slow.json"), "timed out"},
		"http":      {allow, strings.Replace(u("/ok.json"), "https", "http", 1), "https URL"},
		"root":      {allow, u("/"), "must have a path"},
		"fragment":  {allow, u("/ok.json#x"), "fragment"},
		"dots":      {allow, u("/a/../ok.json"), "dot segments"},
	} {
		_, err := oauth.FetchClientMetadata(ctx, c.hc, c.url)
		var oe *oauth.Error
		if !errors.As(err, &oe) || oe.Code != "invalid_client" || !strings.Contains(oe.Description, c.want) {
			t.Errorf("%s: %v, want invalid_client saying %q", name, err, c.want)
		}
	}
}

// BenchmarkAdmission compares what a data plane does to admit an access
// token (an Ed25519 verification and a JSON decode) with what it does for
// an inference key (a SHA-256 of the token, then a map lookup).
func BenchmarkAdmission(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	tok, _ := oauth.SignAccessToken(priv, claims())
	now := time.Now()
	b.Run("access-token", func(b *testing.B) {
		for b.Loop() {
			if _, err := oauth.VerifyAccessToken(pub, tok, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	key := "sk-gw-" + strings.Repeat("k", 40)
	b.Run("inference-key-hash", func(b *testing.B) {
		for b.Loop() {
			_ = sha256.Sum256([]byte(key))
		}
	})
}
