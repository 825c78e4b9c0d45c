package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// Regression tests of issue 17 ("Hardening, round 2") that need whole
// servers: a control plane and remote data planes in process, on SQLite
// and PostgreSQL. docs/security.md lists them.

const (
	gptMini = "openai/gpt-4o-mini"
	haiku   = "anthropic/claude-haiku-4-5-20251001"
)

// deadURL is the address of a control plane that is gone.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// dataPlaneToken issues the instance key a remote data plane polls with.
func dataPlaneToken(t *testing.T, cp *running) string {
	t.Helper()
	k, err := cp.Owner.CreateManagementKey(context.Background(), client.InstanceScope(), wire.ManagementKeyCreate{
		Permissions: []string{"bundles.read", "usage.ingest", "data-planes.heartbeat", "policy-state.sync"}, Label: "dp"})
	if err != nil {
		t.Fatal(err)
	}
	return k.Token
}

// remotePlane starts a data plane of cp named id, polling fast.
func remotePlane(t *testing.T, controlPlaneURL, token, id, stateDir string, adjust func(*server.Config)) *running {
	t.Helper()
	cfg := server.Config{Role: server.RoleDataPlane, ControlPlaneURL: controlPlaneURL, Token: token, DataPlaneID: id,
		StateDir: stateDir, PollInterval: 50 * time.Millisecond, HeartbeatInterval: time.Second}
	if adjust != nil {
		adjust(&cfg)
	}
	return startServer(t, cfg)
}

// enroll approves data plane id for the default organization once it has
// asked.
func enroll(t *testing.T, cp *running, id string, platform *bool) wire.DataPlaneEnrollment {
	t.Helper()
	ctx := context.Background()
	waitUntil(t, id+" to ask to be enrolled", func() bool { _, err := cp.Owner.GetEnrollment(ctx, id); return err == nil })
	e, err := cp.Owner.ApproveEnrollment(ctx, id, wire.DataPlaneEnrollmentApprove{Organizations: []string{"default"}, PlatformCredentials: platform})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// status sends a chat completion for model and returns the status and the
// error code, if any.
func chatStatus(t *testing.T, base, token, model string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/inf/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code string }
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &e)
	return resp.StatusCode, e.Error.Code
}

func ptr[T any](v T) *T { return &v }

// Row 2: a disabled user's inference keys still answered twenty seconds
// later. Disabling revokes them; the in-process data plane refuses them as
// the disable call returns, a remote one within a bundle poll.
func TestDisabledUsersKeysStopServing(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			cp := startServer(t, server.Config{Role: server.RoleAll, DB: storetest.Open(t, d), Keyring: keyring(t)})
			up := providerstest.NewOpenAI(t, "sk-upstream-disabled")
			if _, err := cp.Owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			dp := remotePlane(t, cp.URL, dataPlaneToken(t, cp), "dp-disabled", t.TempDir(), nil)
			enroll(t, cp, "dp-disabled", nil)

			member := session(t, cp.URL, "/api/v1/auth/signup", "leaver@example.com", "a long enough password")
			var me struct{ Data wire.Me }
			if resp, raw := playgroundCall(t, cp.URL, "GET", "/api/v1/auth/me", "cookie:"+member, ""); resp.StatusCode != 200 {
				t.Fatalf("me: %d %s", resp.StatusCode, raw)
			} else if err := json.Unmarshal([]byte(raw), &me); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"/api/v1/organizations/default/members", "/api/v1/organizations/default/workspaces/default/members"} {
				if resp, raw := playgroundCall(t, cp.URL, "POST", p, cp.token, `{"user_id":"`+me.Data.User.ID.String()+`","role":"member"}`); resp.StatusCode != 200 {
					t.Fatalf("%s: %d %s", p, resp.StatusCode, raw)
				}
			}
			resp, raw := playgroundCall(t, cp.URL, "POST", "/api/v1/organizations/default/workspaces/default/inference-keys", "cookie:"+member, `{"name":"mine"}`)
			if resp.StatusCode != 200 {
				t.Fatalf("inference key: %d %s", resp.StatusCode, raw)
			}
			var key struct{ Data wire.InferenceKey }
			if err := json.Unmarshal([]byte(raw), &key); err != nil {
				t.Fatal(err)
			}
			token := key.Data.Token
			for _, base := range []string{cp.URL, dp.URL} {
				waitUntil(t, "the key to answer at "+base, func() bool { s, _ := chatStatus(t, base, token, gptMini); return s == 200 })
			}

			if resp, raw := playgroundCall(t, cp.URL, "POST", "/api/v1/instance/users/"+me.Data.User.ID.String()+"/disable", cp.token, ""); resp.StatusCode != 200 {
				t.Fatalf("disable: %d %s", resp.StatusCode, raw)
			}
			if s, code := chatStatus(t, cp.URL, token, gptMini); s != 401 {
				t.Fatalf("the in-process data plane after disabling: %d %s", s, code)
			}
			start := time.Now()
			waitUntil(t, "the remote data plane to refuse the key", func() bool { s, _ := chatStatus(t, dp.URL, token, gptMini); return s == 401 })
			t.Logf("the remote data plane refused the key %s after the disable call (poll every 50 ms)", time.Since(start).Round(time.Millisecond))
		})
	}
}

// Row 4: a copy of a data plane's folder, started against a dead control
// plane, served offline with the instance-wide credential, whose secret it
// could open with the private key in the same folder. The key now lives
// where the operator says (--key-file, GW_DATA_PLANE_KEY); platform
// credentials reach a data plane only if its enrollment says so; the
// cache can be turned off.
func TestStolenDataPlaneFolder(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			cp := startServer(t, server.Config{Role: server.RoleControlPlane, DB: storetest.Open(t, d), Keyring: keyring(t)})
			platformUp := providerstest.NewOpenAI(t, "sk-platform-instance-wide")
			orgUp := providerstest.NewAnthropic(t, "sk-ant-org-acme")
			if _, err := cp.Owner.CreateCredential(ctx, client.InstanceScope(), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "platform", Secret: platformUp.Key, BaseURL: platformUp.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			if _, err := cp.Owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
				Provider: "anthropic", Label: "org", Secret: orgUp.Key, BaseURL: orgUp.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			ik, err := cp.Owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "app"})
			if err != nil {
				t.Fatal(err)
			}
			token := dataPlaneToken(t, cp)

			// The key outside the data dir; a new enrollment, without
			// platform credentials.
			folder, keyFile := t.TempDir(), filepath.Join(t.TempDir(), "keys", "dp.key")
			dp := remotePlane(t, cp.URL, token, "dp-a", folder, func(c *server.Config) { c.DataPlaneKeyFile = keyFile })
			if e := enroll(t, cp, "dp-a", nil); e.PlatformCredentials {
				t.Fatal("a new enrollment receives platform credentials")
			}
			waitUntil(t, "the org credential's model", func() bool { s, _ := chatStatus(t, dp.URL, ik.Token, haiku); return s == 200 })
			if s, code := chatStatus(t, dp.URL, ik.Token, gptMini); s != 404 {
				t.Fatalf("a model only a platform credential serves: %d %s, want 404", s, code)
			}
			if _, err := os.Stat(filepath.Join(folder, "data-plane-key")); !os.IsNotExist(err) {
				t.Fatalf("a private key is in the data dir: %v", err)
			}
			if _, err := os.Stat(keyFile); err != nil {
				t.Fatalf("no key at --key-file: %v", err)
			}
			// The cache is written once the bundles are admitted.
			waitUntil(t, "the bundle cache", func() bool { _, err := os.Stat(filepath.Join(folder, "bundles.json")); return err == nil })
			if scopes := cachedScopes(t, folder); len(scopes) != 1 || scopes[0] != "org" {
				t.Fatalf("the cached bundles hold credentials of scopes %v, want only the org's", scopes)
			}

			// The admin lets platform credentials in, then takes them out
			// again: each change reaches the running data plane.
			if e := enroll(t, cp, "dp-a", ptr(true)); !e.PlatformCredentials {
				t.Fatal("platform_credentials not set")
			}
			platformUp.SetDefault(providerstest.Reply{Text: "platform", Usage: providerstest.Usage{Input: 1, Output: 1}})
			waitUntil(t, "the platform credential's model", func() bool { s, _ := chatStatus(t, dp.URL, ik.Token, gptMini); return s == 200 })
			if got := platformUp.Last(t).Header.Get("Authorization"); got != "Bearer "+platformUp.Key {
				t.Fatalf("the platform credential was not used: %q", got)
			}
			enroll(t, cp, "dp-a", ptr(false))
			waitUntil(t, "the platform credential to be withdrawn", func() bool { s, _ := chatStatus(t, dp.URL, ik.Token, gptMini); return s == 404 })
			waitUntil(t, "the cache to drop it", func() bool { return !slices.Contains(cachedScopes(t, folder), "platform") })
			dp.stop()

			// A thief copies the folder and starts it against a dead
			// control plane: the cached secrets do not open without the
			// key, and no upstream sees a request.
			stolen := t.TempDir()
			copyDir(t, folder, stolen)
			before := len(orgUp.Requests()) + len(platformUp.Requests())
			thief := remotePlane(t, deadURL(t), token, "dp-a", stolen, nil)
			// The org credential's model: its secret is sealed to a key the
			// copy lacks. The platform credential's: not in the bundle.
			for m, want := range map[string]string{haiku: "credential_unavailable", gptMini: "model_not_found"} {
				if s, code := chatStatus(t, thief.URL, ik.Token, m); code != want {
					t.Fatalf("the stolen copy, %s: %d %s, want %s", m, s, code, want)
				}
			}
			if after := len(orgUp.Requests()) + len(platformUp.Requests()); after != before {
				t.Fatalf("the stolen copy reached an upstream (%d requests)", after-before)
			}
			thief.stop()

			// The operator's own restart, with the key, serves from the
			// cache while the control plane is down.
			back := remotePlane(t, deadURL(t), token, "dp-a", folder, func(c *server.Config) { c.DataPlaneKeyFile = keyFile })
			orgUp.SetDefault(providerstest.Reply{Text: "cached", Usage: providerstest.Usage{Input: 1, Output: 1}})
			if s, code := chatStatus(t, back.URL, ik.Token, haiku); s != 200 {
				t.Fatalf("a restart with the key, offline: %d %s", s, code)
			}
			back.stop()

			// The key itself in GW_DATA_PLANE_KEY: the enrollment request
			// carries its fingerprint, and nothing is written to the folder.
			k, err := secrets.GenerateDataPlaneKey()
			if err != nil {
				t.Fatal(err)
			}
			text, _ := k.Encode()
			envFolder := t.TempDir()
			remotePlane(t, cp.URL, token, "dp-env", envFolder, func(c *server.Config) { c.DataPlaneKey = text })
			e := enroll(t, cp, "dp-env", nil)
			if e.Fingerprint != k.Public().Fingerprint() {
				t.Fatalf("enrolled fingerprint %s, the key's is %s", e.Fingerprint, k.Public().Fingerprint())
			}
			if _, err := os.Stat(filepath.Join(envFolder, "data-plane-key")); !os.IsNotExist(err) {
				t.Fatalf("a key file was written beside GW_DATA_PLANE_KEY: %v", err)
			}
		})
	}
}

// Row 4: --bundle-cache=off keeps bundles in memory only: nothing in the
// folder, a cache left by an earlier run deleted, and a restart without
// the control plane serves nothing (the documented trade-off).
func TestBundleCacheOff(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			cp := startServer(t, server.Config{Role: server.RoleControlPlane, DB: storetest.Open(t, d), Keyring: keyring(t)})
			up := providerstest.NewOpenAI(t, "sk-upstream-nocache")
			if _, err := cp.Owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
				Provider: "openai", Label: "org", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
				t.Fatal(err)
			}
			ik, err := cp.Owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "app"})
			if err != nil {
				t.Fatal(err)
			}
			token := dataPlaneToken(t, cp)
			folder, keyFile := t.TempDir(), filepath.Join(t.TempDir(), "dp.key")
			withKey := func(c *server.Config) { c.DataPlaneKeyFile = keyFile }
			// A first run with the cache on leaves bundles on disk.
			dp := remotePlane(t, cp.URL, token, "dp-mem", folder, withKey)
			enroll(t, cp, "dp-mem", nil)
			waitUntil(t, "the first run to serve", func() bool { s, _ := chatStatus(t, dp.URL, ik.Token, gptMini); return s == 200 })
			waitUntil(t, "the first run's cache", func() bool { _, err := os.Stat(filepath.Join(folder, "bundles.json")); return err == nil })
			dp.stop()
			// With the cache off, that file goes, and none comes back.
			off := func(c *server.Config) { withKey(c); c.BundleCacheOff = true }
			dp = remotePlane(t, cp.URL, token, "dp-mem", folder, off)
			waitUntil(t, "the cache-less run to serve", func() bool { s, _ := chatStatus(t, dp.URL, ik.Token, gptMini); return s == 200 })
			if _, err := os.Stat(filepath.Join(folder, "bundles.json")); !os.IsNotExist(err) {
				t.Fatalf("bundles on disk with the cache off: %v", err)
			}
			dp.stop()
			offline := remotePlane(t, deadURL(t), token, "dp-mem", folder, off)
			if s, code := chatStatus(t, offline.URL, ik.Token, gptMini); s != 503 || code != "bundle_not_ready" {
				t.Fatalf("a cache-less restart without the control plane: %d %s, want 503 bundle_not_ready", s, code)
			}
		})
	}
}

// cachedScopes reads a data plane's bundle cache: the scope of every
// credential in it.
func cachedScopes(t *testing.T, folder string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(folder, "bundles.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cached wire.DataPlaneBundles
	if err := json.Unmarshal(raw, &cached); err != nil {
		t.Fatal(err)
	}
	var scopes []string
	for _, b := range cached.Bundles {
		var body bundle.Body
		if err := json.Unmarshal(b.Body, &body); err != nil {
			t.Fatal(err)
		}
		for _, c := range body.Credentials {
			scopes = append(scopes, string(c.Scope))
		}
	}
	return scopes
}

// copyDir copies the regular files of src (recursively) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, raw, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
