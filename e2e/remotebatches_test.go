package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// TestRemoteBatchesOpenAINode runs e2e/node/batches.mjs against two REMOTE
// data planes of one control plane (role control-plane: it runs no batch
// itself): the openai npm package, unchanged, uploads a file through the
// first plane, creates the batch through the second, polls it through the
// first, reads its output through both, and cancels a second batch
// through the second plane (issue 34, part 1: any plane serves any file or
// batch). Both planes run the batches, each line taken once; every line
// sent leaves exactly one usage event at the control plane, naming its
// batch, and no more arrive later.
func TestRemoteBatchesOpenAINode(t *testing.T) {
	node, dir := nodeWith(t, "openai")
	ctx := context.Background()
	fake := providerstest.NewOpenAI(t, "sk-upstream-remote-batches")
	fake.SetDefault(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 12, Output: 5}})
	p := startBudgetPlanes(t, storetest.SQLite, "remotebatches")
	p.dpEnv = []string{"GW_BATCH_PACE=20ms"}
	if _, err := p.owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"),
		wire.ProviderCredentialCreate{Provider: "openai", Label: "fake", Secret: fake.Key, BaseURL: fake.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	ik, err := p.owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "batches"})
	if err != nil {
		t.Fatal(err)
	}
	p.startDataPlanes(t, "dp-1", "dp-2")

	summary := runBatchScript(t, node, dir, "batches.mjs", p.dps[0], ik.Token, "GW_INF_BASE_OTHER="+p.dps[1].URL+"/inf")
	var got struct {
		Completed    int      `json:"completed"`
		CancelledRan int      `json:"cancelled_ran"`
		Batches      []string `json:"batches"`
	}
	if err := json.Unmarshal([]byte(summary), &got); err != nil || len(got.Batches) != 2 {
		t.Fatalf("summary %q: %v", summary, err)
	}

	b, err := p.owner.GetBatch(ctx, "default", "default", got.Batches[1])
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != "cancelled" || b.RequestCounts.Completed != got.CancelledRan || b.RequestCounts.Completed >= 40 {
		t.Fatalf("the cancelled batch at the control plane: %+v", b)
	}

	// Exactly one event per line sent, each naming its batch: as many as
	// the upstream answered, no request id twice, and still so after the
	// planes' spools have had time to ship anything more.
	check := func() (ok bool, why string) {
		events := batchEvents(t, p)
		sent := len(fake.Requests())
		seen := map[string]bool{}
		perBatch := map[string]int{}
		for _, e := range events {
			if e.RequestID == nil || seen[*e.RequestID] {
				return false, "a request id twice or none"
			}
			seen[*e.RequestID] = true
			if e.BatchID == nil || !slices.Contains(got.Batches, *e.BatchID) {
				return false, "an event of no batch of the run"
			}
			perBatch[*e.BatchID]++
		}
		if len(events) != sent || perBatch[got.Batches[0]] != got.Completed || perBatch[got.Batches[0]] != 3 ||
			perBatch[got.Batches[1]] != b.RequestCounts.Completed+b.RequestCounts.Failed {
			return false, "events and lines sent differ"
		}
		return true, ""
	}
	waitFor(t, "one usage event per batch line sent", func() bool { ok, _ := check(); return ok })
	time.Sleep(time.Second)
	if ok, why := check(); !ok {
		t.Fatalf("after the spools shipped again: %s (%d events, %d requests upstream)", why, len(batchEvents(t, p)), len(fake.Requests()))
	}
	p.stop(t)
}

// batchEvents are the default workspace's usage events that name a
// batch, as the control plane recorded them.
func batchEvents(t *testing.T, p *budgetPlanes) []wire.UsageEvent {
	t.Helper()
	req, _ := http.NewRequest("GET", p.cp.URL+"/api/v1/organizations/default/workspaces/default/usage-events?limit=200", nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page wire.Page[wire.UsageEvent]
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	var out []wire.UsageEvent
	for _, e := range page.Data {
		if e.BatchID != nil {
			out = append(out, e)
		}
	}
	return out
}
