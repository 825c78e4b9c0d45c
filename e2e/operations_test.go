package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
)

// TestOperatorView runs a control plane and a remote data plane as real
// gw serve processes: gw data-planes list|get and gw status read the data
// plane's state, its metrics listener serves /metrics and the probes, and
// a caller's X-Request-Id names the request in the control plane's usage
// events.
func TestOperatorView(t *testing.T) {
	ctx := context.Background()
	secretKey := "GW_SECRET_KEY=" + strings.Repeat("ef", 32)
	cp := startServe(t, "GW_ROLE=control-plane", "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_ops", secretKey)
	anon, _ := client.New(client.Options{Server: cp.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_ops", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: cp.URL, Token: boot.ManagementKey.Token})
	up := providerstest.NewOpenAI(t, "sk-upstream-ops")
	if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	dpKey, err := owner.CreateManagementKey(ctx, client.InstanceScope(), wire.ManagementKeyCreate{
		Permissions: []string{"bundles.read", "usage.ingest", "data-planes.heartbeat"}, Label: "data-plane"})
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := freeAddr(t)
	dp := startServe(t, "GW_ROLE=data-plane", "GW_CONTROL_PLANE_URL="+cp.URL, "GW_TOKEN="+dpKey.Token, "GW_DATA_DIR="+t.TempDir(),
		"GW_POLL_INTERVAL=200ms", "GW_HEARTBEAT_INTERVAL=200ms", "GW_DATA_PLANE_ID=dp-ops", "GW_METRICS_ADDR="+metricsAddr, secretKey)
	metricsURL := "http://" + metricsAddr
	enrollDataPlane(t, owner, "dp-ops", "default")
	waitFor(t, "the data plane to be ready", func() bool { return status(dp.URL+"/readyz") == 200 })
	if status(metricsURL+"/readyz") != 200 || status(metricsURL+"/healthz") != 200 || status(cp.URL+"/readyz") != 200 {
		t.Fatal("probes")
	}

	// One chat completion with the caller's request id.
	up.Enqueue(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 11, Output: 3}})
	req, _ := http.NewRequest("POST", dp.URL+"/inf/v1/chat/completions",
		strings.NewReader(`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+ik.Token)
	req.Header.Set("X-Request-Id", "ops-request-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != "ops-request-1" {
		t.Fatalf("chat: %v %v", resp, err)
	}
	resp.Body.Close()
	waitFor(t, "the usage event with the caller's request id on the control plane", func() bool {
		var page wire.Page[wire.UsageEvent]
		if err := getJSON(cp.URL, boot.ManagementKey.Token, "/api/v1/organizations/default/usage-events", &page); err != nil {
			return false
		}
		return len(page.Data) == 1 && page.Data[0].RequestID != nil && *page.Data[0].RequestID == "ops-request-1"
	})
	if !strings.Contains(dp.logs.String(), "request_id=ops-request-1") || !strings.Contains(dp.logs.String(), "model=openai/gpt-4o-mini") {
		t.Fatalf("data plane access log:\n%s", dp.logs)
	}

	// The data plane's metrics, on its own listener only.
	body := fetch(t, metricsURL+"/metrics")
	for _, want := range []string{
		`gw_inference_requests_total{endpoint="chat.completions",model="openai/gpt-4o-mini",outcome="ok",provider="openai",status="200"} 1`,
		`gw_inference_tokens_total{model="openai/gpt-4o-mini",provider="openai",type="input"} 11`,
		`gw_build_info{role="data-plane",version=`, "gw_usage_spool_depth ", "gw_bundle_version{org_id=",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("data plane /metrics lacks %s", want)
		}
	}
	if status(dp.URL+"/metrics") == 200 {
		t.Error("/metrics on the public port")
	}

	cli := []string{"XDG_CONFIG_HOME=" + t.TempDir(), "GW_CONTEXT=", "GW_SERVER=" + cp.URL, "GW_TOKEN=" + boot.ManagementKey.Token}
	waitFor(t, "the data plane to be current", func() bool {
		out, _ := runGW(t, cli, "data-planes", "list", "--output", "json")
		var views []struct {
			ID             string           `json:"id"`
			Status         string           `json:"status"`
			Current        *bool            `json:"current"`
			BundleVersions map[string]int64 `json:"bundle_versions"`
			SpoolDepth     int64            `json:"spool_depth"`
		}
		if err := json.Unmarshal([]byte(out), &views); err != nil {
			t.Fatalf("data-planes list --output json: %v\n%s", err, out)
		}
		return len(views) == 1 && views[0].ID == "dp-ops" && views[0].Status == "healthy" && views[0].Current != nil && *views[0].Current &&
			len(views[0].BundleVersions) == 1
	})
	out, _ := runGW(t, cli, "data-planes", "list", "--output", "table")
	if !strings.Contains(out, "dp-ops") || !strings.Contains(out, "healthy") || !strings.Contains(out, "CURRENT") {
		t.Fatalf("data-planes list:\n%s", out)
	}
	out, _ = runGW(t, cli, "data-planes", "get", "dp-ops", "--output", "yaml")
	if !strings.Contains(out, "id: dp-ops") || !strings.Contains(out, "current: true") {
		t.Fatalf("data-planes get:\n%s", out)
	}
	out, _ = runGW(t, cli, "status", "--output", "table")
	for _, want := range []string{"database", "ok", "data plane dp-ops", "all healthy and current"} {
		if !strings.Contains(out, want) {
			t.Fatalf("gw status lacks %q:\n%s", want, out)
		}
	}
}

func status(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
