package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// TestSplitPlanes runs the control plane and a data plane as separate
// processes: the data plane pins the signing key, polls bundles, serves
// discovery, reports heartbeats, follows a revocation, and after a restart
// serves its cached bundles with the control plane gone.
func TestSplitPlanes(t *testing.T) {
	ctx := context.Background()
	// Only the control plane holds the master key: the data plane's
	// secrets are sealed to its own (enrollment_test.go).
	secretKey := "GW_SECRET_KEY=" + strings.Repeat("ab", 32)
	cp := startServe(t, "GW_ROLE=control-plane", "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_split", secretKey)
	if resp, err := http.Get(cp.URL + "/inf/v1/models"); err != nil || resp.StatusCode != 404 {
		t.Fatalf("control-plane role serves /inf/v1: %v %v", resp.StatusCode, err)
	}
	anon, _ := client.New(client.Options{Server: cp.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_split", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: cp.URL, Token: boot.ManagementKey.Token})
	if _, err := owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{Provider: "openai", Label: "x", Secret: "sk-split"}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "split"})
	if err != nil {
		t.Fatal(err)
	}
	dpKey, err := owner.CreateManagementKey(ctx, client.InstanceScope(), wire.ManagementKeyCreate{
		Permissions: []string{"bundles.read", "usage.ingest", "data-planes.heartbeat"}, Label: "data-plane"})
	if err != nil {
		t.Fatal(err)
	}
	dpDir := t.TempDir()
	dpEnv := []string{"GW_ROLE=data-plane", "GW_CONTROL_PLANE_URL=" + cp.URL, "GW_TOKEN=" + dpKey.Token, "GW_DATA_DIR=" + dpDir,
		"GW_POLL_INTERVAL=200ms", "GW_HEARTBEAT_INTERVAL=200ms", "GW_DATA_PLANE_ID=dp-test"}
	dp := startServe(t, dpEnv...)
	enrollDataPlane(t, owner, "dp-test", "default")
	dpc, _ := client.New(client.Options{Server: cp.URL, Token: dpKey.Token})

	models := func(url string) (int, int) {
		req, _ := http.NewRequest("GET", url+"/inf/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+ik.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, 0
		}
		defer resp.Body.Close()
		var body struct{ Data []struct{ ID string } }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, len(body.Data)
	}
	waitFor(t, "discovery on the data plane", func() bool { st, n := models(dp.URL); return st == 200 && n > 0 })
	waitFor(t, "a heartbeat", func() bool {
		list, err := owner.ListDataPlanes(ctx)
		return err == nil && len(list) == 1 && list[0].ID == "dp-test" && len(list[0].BundleVersions) == 1
	})
	// Inference on the data plane: its usage is spooled, shipped and
	// reported by the control plane.
	sdk := openai.NewClient(option.WithBaseURL(dp.URL+"/inf/v1/"), option.WithAPIKey(ik.Token), option.WithMaxRetries(0))
	chatThroughGateway(t, owner, sdk, func() {
		waitFor(t, "the data plane to admit the current bundle", func() bool {
			b, _, _, err := dpc.PollBundles(ctx, "dp-test", "")
			list, err2 := owner.ListDataPlanes(ctx)
			if err != nil || err2 != nil || len(b.Bundles) != 1 || len(list) != 1 {
				return false
			}
			return list[0].BundleVersions[b.Bundles[0].OrgID.String()] == b.Bundles[0].Version
		})
	})

	if _, err := owner.RevokeInferenceKey(ctx, "default", "default", ik.ID.String()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revocation to reach the data plane", func() bool { st, _ := models(dp.URL); return st == 401 })

	// With the control plane gone, a restarted data plane serves what it
	// cached (the revoked key stays refused).
	dp.stop(t)
	cp.stop(t)
	dp = startServe(t, dpEnv...)
	if st, _ := models(dp.URL); st != 401 {
		t.Fatalf("cached bundle after restart: %d", st)
	}
	if !strings.Contains(dp.logs.String(), "bundle poll failed") {
		waitFor(t, "a failed poll to be logged", func() bool { return strings.Contains(dp.logs.String(), "bundle poll failed") })
	}
	dp.stop(t)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReplicasSharePostgres runs two gw serve replicas on one PostgreSQL
// database, with periodic refresh effectively off: a change made on one
// reaches the other's data plane through LISTEN/NOTIFY.
func TestReplicasSharePostgres(t *testing.T) {
	if !slices.Contains(storetest.Dialects(t), storetest.Postgres) {
		t.Skip("needs PostgreSQL (GW_TEST_DATABASE_URL)")
	}
	ctx := context.Background()
	url, err := storetest.URL(t, storetest.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"GW_DATABASE_URL=" + url, "GW_SECRET_KEY=" + strings.Repeat("cd", 32), "GW_BUNDLE_REFRESH_INTERVAL=1h",
		"GW_BOOTSTRAP_TOKEN=setup_replicas"}
	a := startServe(t, append(env, "GW_DATA_DIR="+t.TempDir())...)
	b := startServe(t, append(env, "GW_DATA_DIR="+t.TempDir())...)
	anon, _ := client.New(client.Options{Server: a.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_replicas", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: a.URL, Token: boot.ManagementKey.Token})
	if _, err := owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{Provider: "openai", Label: "x", Secret: "sk-r"}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	status := func(url string) int {
		req, _ := http.NewRequest("GET", url+"/inf/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+ik.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, "replica B to learn the key made on A", func() bool { return status(b.URL) == 200 })
	if _, err := owner.RevokeInferenceKey(ctx, "default", "default", ik.ID.String()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "replica B to learn the revocation made on A", func() bool { return status(b.URL) == 401 })
	a.stop(t)
	b.stop(t)
}
