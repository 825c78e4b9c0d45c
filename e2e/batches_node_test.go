package e2e

import (
	"context"
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

// TestNodeBatches runs e2e/node/batches.mjs: the openai npm package,
// unchanged, uploads a batch file to gw serve, creates a batch that gw
// runs itself line by line, polls it, reads its output file, and cancels a
// second batch (issue 34). Every line that ran leaves one usage event.
// Skipped without node and the package, unless GW_TEST_REQUIRE_NODE is set.
func TestNodeBatches(t *testing.T) {
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	missing := ""
	if err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		missing = "openai is not installed in e2e/node (run npm ci there)"
	}
	if missing != "" {
		if os.Getenv("GW_TEST_REQUIRE_NODE") != "" {
			t.Fatal(missing + ", and GW_TEST_REQUIRE_NODE is set")
		}
		t.Skip(missing)
	}

	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN=setup_batches", "GW_BATCH_PACE=20ms")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: "setup_batches", Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	oai := providerstest.NewOpenAI(t, "sk-upstream-node-batches")
	oai.SetDefault(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 12, Output: 5}})
	if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"),
		wire.ProviderCredentialCreate{Provider: "openai", Label: "fake", Secret: oai.Key, BaseURL: oai.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "batches"})
	if err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "batches.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GW_INF_BASE="+srv.URL+"/inf", "GW_INF_KEY="+ik.Token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node batches.mjs: %v\n%s\ngw serve:\n%s", err, out, srv.logs)
	}
	if !strings.Contains(string(out), `{"ok":true`) {
		t.Fatalf("node batches.mjs printed no summary:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	// One event per line sent: the upstream's count of requests.
	waitFor(t, "the batch lines' usage events", func() bool {
		r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today"})
		return err == nil && r.Totals.Requests == int64(len(oai.Requests())) && len(oai.Requests()) >= 3
	})
}
