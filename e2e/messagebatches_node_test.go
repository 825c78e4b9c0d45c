package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
)

// TestNodeMessageBatches runs e2e/node/messagebatches.mjs: the
// @anthropic-ai/sdk npm package, unchanged, creates an Anthropic message
// batch that gw runs itself request by request, polls it, reads its
// results, and cancels a second batch (issue 34). Every request that ran
// leaves one usage event. Skipped without node and the package, unless
// GW_TEST_REQUIRE_NODE is set.
func TestNodeMessageBatches(t *testing.T) {
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	missing := ""
	if err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "@anthropic-ai", "sdk", "package.json")); err != nil {
		missing = "@anthropic-ai/sdk is not installed in e2e/node (run npm ci there)"
	}
	if missing != "" {
		if os.Getenv("GW_TEST_REQUIRE_NODE") != "" {
			t.Fatal(missing + ", and GW_TEST_REQUIRE_NODE is set")
		}
		t.Skip(missing)
	}

	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_msgbatches", "GW_BATCH_PACE=20ms")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_msgbatches", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	oai := providerstest.NewAnthropic(t, "sk-ant-upstream-node-msgbatches")
	oai.SetDefault(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 12, Output: 5}})
	if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"),
		wire.ProviderCredentialCreate{Provider: "anthropic", Label: "fake", Secret: oai.Key, BaseURL: oai.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "message-batches"})
	if err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "messagebatches.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GW_INF_BASE="+srv.URL+"/inf", "GW_INF_KEY="+ik.Token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node messagebatches.mjs: %v\n%s\ngw serve:\n%s", err, out, srv.logs)
	}
	if !strings.Contains(string(out), `{"ok":true`) {
		t.Fatalf("node messagebatches.mjs printed no summary:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	// One event per request sent: the upstream's count of requests.
	var seen string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today"})
		if err == nil {
			seen = fmt.Sprintf("%d events, %d upstream requests", r.Totals.Requests, len(oai.Requests()))
			if r.Totals.Requests == int64(len(oai.Requests())) && len(oai.Requests()) >= 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch requests' usage events: %s (%v)\ngw serve:\n%s", seen, err, srv.logs)
		}
	}
}
