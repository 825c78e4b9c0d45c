package dataplane

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/oauth"
)

// The verified-token cache: a token verifies once and is then found by
// its hash; its expiry is still checked on every use; a token that does
// not verify is not kept; a new verification key forgets everything.
func TestTokenCache(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	now := time.Now()
	tok, _ := oauth.SignAccessToken(priv, oauth.Claims{Grant: uuid.New(), Expires: now.Add(time.Minute).Unix()})
	var c tokenCache
	if _, err := c.verify(&pub, tok, now); err != nil || len(c.m) != 1 {
		t.Fatalf("first: %v %d", err, len(c.m))
	}
	if _, err := c.verify(nil, tok, now); err != nil {
		t.Fatalf("cached: %v", err)
	}
	if _, err := c.verify(&pub, tok, now.Add(time.Minute)); !errors.Is(err, oauth.ErrExpiredToken) {
		t.Fatalf("expired while cached: %v", err)
	}
	if _, err := c.verify(&pub, tok+"x", now); !errors.Is(err, oauth.ErrBadToken) || len(c.m) != 1 {
		t.Fatalf("a bad token: %v %d", err, len(c.m))
	}
	c.reset()
	if _, err := c.verify(nil, tok, now); !errors.Is(err, oauth.ErrBadToken) {
		t.Fatalf("after a key change: %v", err)
	}
}

// BenchmarkTokenAdmission: an access token's check once cached, against
// its first verification.
func BenchmarkTokenAdmission(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	now := time.Now()
	tok, _ := oauth.SignAccessToken(priv, oauth.Claims{Grant: uuid.New(), Expires: now.Add(time.Hour).Unix()})
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			var c tokenCache
			_, _ = c.verify(&pub, tok, now)
		}
	})
	var c tokenCache
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			_, _ = c.verify(&pub, tok, now)
		}
	})
}

// A data plane's protected resource metadata names the control plane it
// was given as the authorization server, or, in process, the origin the
// request reached.
func TestResourceMetadataNamesTheAuthorizationServer(t *testing.T) {
	for issuer, want := range map[string]string{"https://cp.example.com/": "https://cp.example.com", "": "http://gw.example.com"} {
		p := NewPlane(nil, Options{OAuthIssuer: issuer})
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest("GET", "http://gw.example.com"+mcpResourceMetadataPath, nil))
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || doc.Resource != "http://gw.example.com/inf/v1/mcp" ||
			len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != want {
			t.Errorf("issuer %q: %s %v", issuer, w.Body, err)
		}
	}
}
