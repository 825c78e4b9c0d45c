package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/wire"
)

// TestNodeMessageBatches runs e2e/node/messagebatches.mjs: the
// @anthropic-ai/sdk npm package, unchanged, creates an Anthropic message
// batch, polls it, reads its results, and cancels a second batch (issue
// 34) — on the fake upstream's own Message Batches API (native) and run
// by gw itself (settings.batches "gateway"). Every request that ran
// leaves one usage event. Skipped without node and the package, unless
// GW_TEST_REQUIRE_NODE is set.
func TestNodeMessageBatches(t *testing.T) {
	node, dir := nodeWith(t, "@anthropic-ai/sdk")
	for _, mode := range []string{"native", "gateway"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			fake := providerstest.NewAnthropic(t, "sk-ant-upstream-node-msgbatches")
			fake.SetDefault(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 12, Output: 5}})
			srv, owner, key := batchServe(t, "setup_msgbatches", "message-batches", wire.ProviderCredentialCreate{Provider: "anthropic", Label: "fake",
				Secret: fake.Key, BaseURL: fake.BaseURL(), Settings: &wire.CredentialSettings{Batches: mode}})

			runBatchScript(t, node, dir, "messagebatches.mjs", srv, key)
			// One event per request sent: the upstream's count of requests.
			var seen string
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				r, err := owner.UsageReport(ctx, "default", client.UsageQuery{Period: "today"})
				if err == nil {
					seen = fmt.Sprintf("%d events, %d upstream requests", r.Totals.Requests, len(fake.Requests()))
					if r.Totals.Requests == int64(len(fake.Requests())) && len(fake.Requests()) >= 3 {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("the batch requests' usage events: %s (%v)\ngw serve:\n%s", seen, err, srv.logs)
				}
			}
			checkBatchMode(t, mode, fake.BatchesCreated())
		})
	}
}
