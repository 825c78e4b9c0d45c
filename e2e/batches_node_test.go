package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
)

// TestNodeBatches runs e2e/node/batches.mjs: the openai npm package,
// unchanged, uploads a batch file to gw serve, creates a batch, polls it,
// reads its output file, and cancels a second batch (issue 34) — twice:
// with the credential's lines run on the fake upstream's own Batch API
// (native, the default: the fake speaks OpenAI's Files and Batches), and
// run by gw itself line by line (settings.batches "gateway"). Every line
// that ran leaves one usage event. Skipped without node and the package,
// unless GW_TEST_REQUIRE_NODE is set.
func TestNodeBatches(t *testing.T) {
	node, dir := nodeWith(t, "openai")
	for _, mode := range []string{"native", "gateway"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			fake := providerstest.NewOpenAI(t, "sk-upstream-node-batches")
			fake.SetDefault(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 12, Output: 5}})
			srv, owner, key := batchServe(t, "setup_batches", "batches", wire.ProviderCredentialCreate{Provider: "openai", Label: "fake", Secret: fake.Key,
				BaseURL: fake.BaseURL(), Settings: &wire.CredentialSettings{Batches: mode}})

			runBatchScript(t, node, dir, "batches.mjs", srv, key)
			// One event per line sent: the upstream's count of requests.
			waitFor(t, "the batch lines' usage events", func() bool {
				r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today"})
				return err == nil && r.Totals.Requests == int64(len(fake.Requests())) && len(fake.Requests()) >= 3
			})
			checkBatchMode(t, mode, fake.BatchesCreated())
		})
	}
}

// checkBatchMode holds a run to its mode: native made provider batches,
// gateway none.
func checkBatchMode(t *testing.T, mode string, created int) {
	t.Helper()
	if (mode == "native") != (created > 0) {
		t.Fatalf("%s batches: the fake upstream's batch API made %d batches", mode, created)
	}
}

// batchServe starts gw serve with a fast batch pace, bootstraps it with
// token, gives its default workspace the credential cred (a fake
// upstream) and returns the server, the owner's client and a new
// inference key's token named keyName.
func batchServe(t *testing.T, token, keyName string, cred wire.ProviderCredentialCreate) (*server, *client.Client, string) {
	t.Helper()
	ctx := context.Background()
	srv := startServe(t, "GW_DATA_DIR="+t.TempDir(), "GW_BOOTSTRAP_TOKEN="+token, "GW_BATCH_PACE=20ms")
	anon, _ := client.New(client.Options{Server: srv.URL})
	boot, err := anon.Bootstrap(ctx, wire.Bootstrap{Token: token, Email: "ops@example.com", Password: "a long passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := client.New(client.Options{Server: srv.URL, Token: boot.ManagementKey.Token})
	if _, err := owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"), cred); err != nil {
		t.Fatal(err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: keyName})
	if err != nil {
		t.Fatal(err)
	}
	return srv, owner, ik.Token
}

// runBatchScript runs a batch SDK script of e2e/node against srv with the
// inference key (and env, more of its environment), and fails unless it
// printed its {"ok":true…} summary, which it returns.
func runBatchScript(t *testing.T, node, dir, script string, srv *server, key string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GW_INF_BASE="+srv.URL+"/inf", "GW_INF_KEY="+key), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s\ngw serve:\n%s", script, err, out, srv.logs)
	}
	if !strings.Contains(string(out), `{"ok":true`) {
		t.Fatalf("node %s printed no summary:\n%s", script, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
