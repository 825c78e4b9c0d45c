package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// A remote data plane tags usage as the control plane's own does (issue
// 21): the key's tags come in its bundle, the header's with the request,
// and the event reaches the control plane through the spool and ingest.
func TestRemoteDataPlaneTagsUsage(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			cp := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, d), Keyring: keyring(t)})
			up := providerstest.NewOpenAI(t, "sk-upstream-tags")
			if _, err := cp.Owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			dp := remotePlane(t, cp.URL, dataPlaneToken(t, cp), "dp-tags", t.TempDir(), nil)
			enroll(t, cp, "dp-tags", nil)
			resp, raw := playgroundCall(t, cp.URL, "POST", "/api/v1/organizations/default/workspaces/default/inference-keys", cp.token,
				`{"name":"tagged","tags":{"team":"search"}}`)
			if resp.StatusCode != 200 {
				t.Fatalf("inference key: %d %s", resp.StatusCode, raw)
			}
			var key struct{ Data wire.InferenceKey }
			if err := json.Unmarshal([]byte(raw), &key); err != nil {
				t.Fatal(err)
			}
			send := func() int {
				req, _ := http.NewRequest("POST", dp.URL+"/inf/v1/chat/completions",
					strings.NewReader(`{"model":"`+gptMini+`","messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Authorization", "Bearer "+key.Data.Token)
				req.Header.Set("X-Gw-Tags", "team=ads, feature=chat")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			waitUntil(t, "the remote data plane to serve the key", func() bool { return send() == 200 })
			waitUntil(t, "the remote data plane's event at the control plane", func() bool {
				resp, raw := playgroundCall(t, cp.URL, "GET", "/api/v1/organizations/default/usage-events?limit=5", cp.token, "")
				if resp.StatusCode != 200 {
					t.Fatalf("events: %d %s", resp.StatusCode, raw)
				}
				var out struct{ Data []wire.UsageEvent }
				if err := json.Unmarshal([]byte(raw), &out); err != nil {
					t.Fatal(err)
				}
				for _, e := range out.Data {
					if e.Status == "ok" && e.Tags["team"] == "search" && e.Tags["feature"] == "chat" && len(e.Tags) == 2 {
						return true
					}
				}
				return false
			})
		})
	}
}
