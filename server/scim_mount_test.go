package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// TestSCIMIsServed: gw serve answers /scim/v2 beside /api/v1, at the base
// URL a SCIM token's answer gives (--public-url), with the organization's
// token only.
func TestSCIMIsServed(t *testing.T) {
	srv := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, storetest.SQLite), Keyring: keyring(t)})
	tok, err := srv.Owner.CreateSCIMToken(context.Background(), "default", wire.SCIMTokenCreate{Label: "okta"})
	if err != nil {
		t.Fatal(err)
	}
	if tok.SCIMURL != srv.URL+"/scim/v2" {
		t.Fatalf("scim_url %q, want %q", tok.SCIMURL, srv.URL+"/scim/v2")
	}
	for token, want := range map[string]int{tok.Token: http.StatusOK, "": http.StatusUnauthorized} {
		req, _ := http.NewRequest("GET", tok.SCIMURL+"/ServiceProviderConfig", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/scim+json") {
			t.Errorf("token %t: %d %q, want %d", token != "", resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
	}
}
