package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/archive"
	"github.com/gw-gateway/gw/server/archive/archivetest"
	"github.com/gw-gateway/gw/server/egress"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// The payload archive end to end (issue 32), on both databases, against
// a real S3-compatible server: the setting is saved (a bucket that does
// not answer is a warning, a bad endpoint a 422), every request is
// archived exactly once under its usage event id — also the ones sent
// while the store was down, once it is back —, the payload endpoint reads
// each back and answers another organization 404, and the retention sweep
// deletes what is past retention_days, auditing each deletion.
func TestArchiveEndToEnd(t *testing.T) {
	s3 := archivetest.Start(t)
	dial := egress.NewDialer(func() egress.Policy { return egress.Policy{} })
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			bucket := "gw-" + strings.ToLower(string(d))
			dest := archive.Destination{Endpoint: s3.Endpoint(), Region: "us-east-1", Bucket: bucket, Prefix: "audit",
				AccessKeyID: archivetest.Access, SecretAccessKey: archivetest.Secret, PathStyle: true}
			c := archive.NewClient(dest, dial)
			if err := c.CreateBucket(ctx); err != nil {
				t.Fatal(err)
			}
			db := storetest.Open(t, d)
			kr := keyring(t)
			cp := startServer(t, server.Config{Role: server.RoleAll, DB: db, Keyring: kr, StateDir: t.TempDir()})
			up := providerstest.NewOpenAI(t, "sk-upstream-archive")
			if _, err := cp.Owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			const wsPath = "/api/v1/organizations/default/workspaces/default"
			setting := func(bucket, endpoint string) string {
				return fmt.Sprintf(`{"archive":{"enabled":true,"retention_days":7,"include":["request","response"],
					"destination":{"kind":"s3","endpoint":%q,"region":"us-east-1","bucket":%q,"prefix":"audit","path_style":true,
					"credential":{"access_key_id":%q,"secret_access_key":%q}}}}`, endpoint, bucket, archivetest.Access, archivetest.Secret)
			}
			// Bad input: a URL that is not http(s) is refused, naming the field.
			resp, raw := playgroundCall(t, cp.URL, "PATCH", wsPath, cp.token, setting(bucket, "ftp://127.0.0.1/x"))
			if resp.StatusCode != 422 || !strings.Contains(raw, "endpoint") {
				t.Fatalf("ftp endpoint: %d %s", resp.StatusCode, raw)
			}
			// A bucket that is not there is saved, with a warning.
			resp, raw = playgroundCall(t, cp.URL, "PATCH", wsPath, cp.token, setting("no-such-bucket", s3.Endpoint()))
			if resp.StatusCode != 200 || !strings.Contains(raw, `"warnings"`) {
				t.Fatalf("missing bucket: %d %s", resp.StatusCode, raw)
			}
			resp, raw = playgroundCall(t, cp.URL, "PATCH", wsPath, cp.token, setting(bucket, s3.Endpoint()))
			if resp.StatusCode != 200 || strings.Contains(raw, `"warnings"`) || strings.Contains(raw, archivetest.Secret) {
				t.Fatalf("archive setting: %d %s", resp.StatusCode, raw)
			}
			// The secret may be left out while the destination stays.
			resp, raw = playgroundCall(t, cp.URL, "PATCH", wsPath, cp.token, strings.Replace(setting(bucket, s3.Endpoint()),
				fmt.Sprintf(`,"secret_access_key":%q`, archivetest.Secret), "", 1))
			if resp.StatusCode != 200 {
				t.Fatalf("archive setting without its secret: %d %s", resp.StatusCode, raw)
			}

			resp, raw = playgroundCall(t, cp.URL, "POST", wsPath+"/inference-keys", cp.token, `{"name":"archived"}`)
			if resp.StatusCode != 200 {
				t.Fatalf("inference key: %d %s", resp.StatusCode, raw)
			}
			var key struct{ Data wire.InferenceKey }
			if err := json.Unmarshal([]byte(raw), &key); err != nil {
				t.Fatal(err)
			}
			sent := 0
			send := func() int {
				sent++
				req, _ := http.NewRequest("POST", cp.URL+"/inf/v1/chat/completions",
					strings.NewReader(fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hello %d"}]}`, gptMini, sent)))
				req.Header.Set("Authorization", "Bearer "+key.Data.Token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			waitUntil(t, "the data plane to serve the key", func() bool { return send() == 200 })
			for range 4 {
				if code := send(); code != 200 {
					t.Fatalf("request: %d", code)
				}
			}
			// A person trying a model in the playground is archived too:
			// the archive is every request of the workspace, not only
			// its keys'.
			sent++
			if resp, raw := playgroundCall(t, cp.URL, "POST", wsPath+"/playground/chat/completions", cp.token,
				fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hello from the playground %d"}]}`, gptMini, sent)); resp.StatusCode != 200 {
				t.Fatalf("playground: %d %s", resp.StatusCode, raw)
			}
			// The store down for a while: requests still answer.
			s3.Stop()
			for range 3 {
				if code := send(); code != 200 {
					t.Fatalf("request while the archive is down: %d", code)
				}
			}
			events := func() []wire.UsageEvent {
				resp, raw := playgroundCall(t, cp.URL, "GET", wsPath+"/usage-events?limit=100", cp.token, "")
				if resp.StatusCode != 200 {
					t.Fatalf("events: %d %s", resp.StatusCode, raw)
				}
				var out struct{ Data []wire.UsageEvent }
				if err := json.Unmarshal([]byte(raw), &out); err != nil {
					t.Fatal(err)
				}
				return out.Data
			}
			var evs []wire.UsageEvent
			waitUntil(t, "every request's usage event", func() bool { evs = events(); return len(evs) == sent })
			time.Sleep(200 * time.Millisecond) // uploads fail meanwhile, and stay spooled
			s3.Restart()
			payload := func(id string) (int, string) {
				resp, raw := playgroundCall(t, cp.URL, "GET", "/api/v1/organizations/default/usage-events/"+id+"/payload", cp.token, "")
				return resp.StatusCode, raw
			}
			for _, e := range evs {
				var raw string
				waitUntil(t, "the payload of "+e.ID.String(), func() bool {
					var code int
					code, raw = payload(e.ID.String())
					return code == 200
				})
				var p struct{ Data wire.UsagePayload }
				if err := json.Unmarshal([]byte(raw), &p); err != nil {
					t.Fatal(err)
				}
				if p.Data.UsageEventID != e.ID || !strings.Contains(string(p.Data.Request), `"hello `) || len(p.Data.Response) == 0 {
					t.Errorf("payload of %s: %s", e.ID, raw)
				}
			}
			// Exactly once: one object per request, each named by its event.
			var keys []string
			if err := c.List(ctx, archive.WorkspacePrefix("audit", evs[0].OrgID, evs[0].WorkspaceID), func(k string) error {
				keys = append(keys, k)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(keys) != sent {
				t.Errorf("%d objects for %d requests: %v", len(keys), sent, keys)
			}
			// Another organization's id answers 404, as an unknown one does.
			if resp, raw := playgroundCall(t, cp.URL, "POST", "/api/v1/organizations", cp.token, `{"name":"Other","slug":"other"}`); resp.StatusCode != 200 {
				t.Fatalf("org: %d %s", resp.StatusCode, raw)
			}
			resp, raw = playgroundCall(t, cp.URL, "GET", "/api/v1/organizations/other/usage-events/"+evs[0].ID.String()+"/payload", cp.token, "")
			if resp.StatusCode != 404 {
				t.Errorf("another organization's event: %d %s", resp.StatusCode, raw)
			}
			if code, raw := payload("0b8e7c1e-0000-4000-8000-000000000009"); code != 404 {
				t.Errorf("unknown event: %d %s", code, raw)
			}
			// Retention: ten days on, everything is past 7 days; each
			// deletion is audited.
			n, err := server.SweepArchives(ctx, store.New(db), kr, func() egress.Policy { return egress.Policy{} }, time.Now().AddDate(0, 0, 10), nil)
			if err != nil || n != sent {
				t.Fatalf("sweep: %d, %v; want %d", n, err, sent)
			}
			if code, raw := payload(evs[0].ID.String()); code != 404 {
				t.Errorf("a swept payload: %d %s", code, raw)
			}
			resp, raw = playgroundCall(t, cp.URL, "GET", "/api/v1/organizations/default/activity?limit=100", cp.token, "")
			if resp.StatusCode != 200 || strings.Count(raw, `"archive.payload_deleted"`) != sent {
				t.Errorf("audit of the deletions: %d, %d entries for %d", resp.StatusCode, strings.Count(raw, `"archive.payload_deleted"`), sent)
			}
		})
	}
}

// A remote data plane archives directly to the workspace's store, with
// the secret sealed to it in its bundle (issue 32): each of its requests
// is one object, read back through the control plane.
func TestArchiveRemoteDataPlane(t *testing.T) {
	s3 := archivetest.Start(t)
	dial := egress.NewDialer(func() egress.Policy { return egress.Policy{} })
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			bucket := "remote-" + strings.ToLower(string(d))
			c := archive.NewClient(archive.Destination{Endpoint: s3.Endpoint(), Bucket: bucket, PathStyle: true,
				AccessKeyID: archivetest.Access, SecretAccessKey: archivetest.Secret}, dial)
			if err := c.CreateBucket(ctx); err != nil {
				t.Fatal(err)
			}
			cp := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, d), Keyring: keyring(t)})
			up := providerstest.NewOpenAI(t, "sk-upstream-archive-remote")
			if _, err := cp.Owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			const wsPath = "/api/v1/organizations/default/workspaces/default"
			resp, raw := playgroundCall(t, cp.URL, "PATCH", wsPath, cp.token, fmt.Sprintf(`{"archive":{"enabled":true,
				"destination":{"kind":"s3","endpoint":%q,"bucket":%q,"path_style":true,
				"credential":{"access_key_id":%q,"secret_access_key":%q}}}}`, s3.Endpoint(), bucket, archivetest.Access, archivetest.Secret))
			if resp.StatusCode != 200 {
				t.Fatalf("archive setting: %d %s", resp.StatusCode, raw)
			}
			dp := remotePlane(t, cp.URL, dataPlaneToken(t, cp), "dp-archive", t.TempDir(), nil)
			enroll(t, cp, "dp-archive", nil)
			resp, raw = playgroundCall(t, cp.URL, "POST", wsPath+"/inference-keys", cp.token, `{"name":"remote"}`)
			if resp.StatusCode != 200 {
				t.Fatalf("inference key: %d %s", resp.StatusCode, raw)
			}
			var key struct{ Data wire.InferenceKey }
			if err := json.Unmarshal([]byte(raw), &key); err != nil {
				t.Fatal(err)
			}
			send := func() int {
				req, _ := http.NewRequest("POST", dp.URL+"/inf/v1/chat/completions",
					strings.NewReader(`{"model":"`+gptMini+`","messages":[{"role":"user","content":"remote hello"}]}`))
				req.Header.Set("Authorization", "Bearer "+key.Data.Token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			waitUntil(t, "the remote data plane to serve the key", func() bool { return send() == 200 })
			send()
			var evs []wire.UsageEvent
			waitUntil(t, "the remote plane's events at the control plane", func() bool {
				resp, raw := playgroundCall(t, cp.URL, "GET", wsPath+"/usage-events?limit=100", cp.token, "")
				var out struct{ Data []wire.UsageEvent }
				if resp.StatusCode != 200 || json.Unmarshal([]byte(raw), &out) != nil {
					t.Fatalf("events: %d %s", resp.StatusCode, raw)
				}
				evs = out.Data
				return len(evs) >= 2
			})
			for _, e := range evs {
				waitUntil(t, "the payload of "+e.ID.String(), func() bool {
					resp, raw := playgroundCall(t, cp.URL, "GET", wsPath+"/usage-events/"+e.ID.String()+"/payload", cp.token, "")
					return resp.StatusCode == 200 && strings.Contains(raw, "remote hello")
				})
			}
			var keys []string
			if err := c.List(ctx, archive.WorkspacePrefix("", evs[0].OrgID, evs[0].WorkspaceID), func(k string) error {
				keys = append(keys, k)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(keys) != len(evs) {
				t.Errorf("%d objects for %d events", len(keys), len(evs))
			}
		})
	}
}
