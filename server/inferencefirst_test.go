package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// TestInferenceFirstIsTheMux: a request the data plane takes without the
// mux (inferencefirst.go) is one the mux would route to the data plane
// under its pattern, untouched; and every request the mux routes there
// as it is (no redirect) takes the short way. Both roles' muxes.
func TestInferenceFirstIsTheMux(t *testing.T) {
	paths := []string{
		"/inf/v1/chat/completions", "/inf/v1/", "/inf/v1/models", "/inf/v1/models/openai/gpt-4o-mini",
		"/inf/v1/responses", "/inf/v1/messages/count_tokens", "/inf/v1/files/file-1/content", "/inf/v1/mcp",
		"/inf/v1/chat/completions/", "/inf/v1//chat/completions", "/inf/v1/./models", "/inf/v1/../api/v1/organizations",
		"/inf/v1/models/..", "/inf/v1/models/.", "/inf/v1/a%2Fb", "/inf/v1", "/inf/v10/models", "/api/v1/organizations",
		"/.well-known/oauth-protected-resource/inf/v1/mcp", "/healthz", "/", "/inf/v1/openapi.json",
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodOptions, http.MethodConnect, http.MethodDelete}
	cp := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, storetest.SQLite), Keyring: keyring(t)})
	dpKey, err := cp.Owner.CreateManagementKey(context.Background(), client.InstanceScope(), wire.ManagementKeyCreate{
		Permissions: []string{"bundles.read", "usage.ingest", "data-planes.heartbeat"}, Label: "dp"})
	if err != nil {
		t.Fatal(err)
	}
	dp := startServer(t, server.Config{Role: server.RoleDataPlane, ControlPlaneURL: cp.URL, Token: dpKey.Token,
		DataPlaneID: "dp-routes", StateDir: t.TempDir(), PollInterval: time.Hour, HeartbeatInterval: time.Hour})
	for role, srv := range map[string]*running{"all": cp, "data plane": dp} {
		mux, plane := server.InferenceRoutes(srv.Handler)
		if plane == nil {
			t.Fatalf("%s: no data plane behind the handler", role)
		}
		short := 0
		for _, p := range paths {
			for _, m := range methods {
				r := httptest.NewRequest(m, "http://gw.example"+p, nil)
				if m == http.MethodConnect {
					r.URL.Path, r.Host = p, "gw.example:443"
				}
				h, pattern := mux.Handler(r)
				routed := pattern == "/inf/v1/" && h == plane
				if server.TakesPlane(r) {
					short++
					if !routed {
						t.Errorf("%s %s %s: taken straight to the data plane, the mux answers it with %T (pattern %q)", role, m, p, h, pattern)
					}
					continue
				}
				// The mux's own answer for a path it would clean is a
				// redirect, not the plane.
				if routed && m != http.MethodConnect && r.URL.RawPath == "" {
					t.Errorf("%s %s %s: the mux routes it to the data plane untouched, the short way does not take it", role, m, p)
				}
			}
		}
		if short == 0 {
			t.Fatalf("%s: no request took the short way", role)
		}
	}
}
