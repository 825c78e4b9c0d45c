package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
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
	for _, mode := range []string{"native", "gateway"} {
		t.Run(mode, func(t *testing.T) { remoteBatchesOpenAINode(t, node, dir, mode) })
	}
}

// remoteBatchesOpenAINode is TestRemoteBatchesOpenAINode with the
// credential's batches run in mode: on the fake upstream's own Batch API
// (native), or by the planes' runners line by line (gateway), where a
// 60-line batch is run by both planes.
func remoteBatchesOpenAINode(t *testing.T, node, dir, mode string) {
	ctx := context.Background()
	fake := providerstest.NewOpenAI(t, "sk-upstream-remote-batches")
	fake.SetDefault(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 12, Output: 5}})
	p := startBudgetPlanes(t, storetest.SQLite, "remotebatches"+mode)
	p.dpEnv = []string{"GW_BATCH_PACE=20ms"}
	if _, err := p.owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"),
		wire.ProviderCredentialCreate{Provider: "openai", Label: "fake", Secret: fake.Key, BaseURL: fake.BaseURL(),
			Settings: &wire.CredentialSettings{Batches: mode}}); err != nil {
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

	checkBatchMode(t, mode, fake.BatchesCreated())
	// In gateway mode, a batch of 60 lines, submitted through the first
	// plane and polled through the second: both planes' runners take its
	// lines, each line reaches the upstream once.
	big := ""
	if mode == "gateway" {
		big = remoteBigBatch(t, p, fake, ik.Token)
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
			if e.BatchID == nil || !slices.Contains(append(got.Batches, big), *e.BatchID) {
				return false, "an event of no batch of the run"
			}
			perBatch[*e.BatchID]++
		}
		if len(events) != sent || perBatch[got.Batches[0]] != got.Completed || perBatch[got.Batches[0]] != 3 || big != "" && perBatch[big] != 60 ||
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
	// 3 + up to 40 + 60 lines: one page holds them.
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

// runBothPlanes submits a batch of n lines through the first data plane
// (submitLines), waits for it through the second, and returns its id.
func runBothPlanes(t *testing.T, p *budgetPlanes, key string, n int) string {
	t.Helper()
	id := submitLines(t, p, key, n)
	var batch struct{ ID, Status string }
	waitFor(t, "the batch to complete", func() bool {
		infCall(t, "GET", p.dps[1].URL+"/inf/v1/batches/"+id, key, "", nil, &batch)
		return batch.Status == "completed"
	})
	return id
}

// submitLines uploads a file of n lines ("hi r0" …) through the first
// data plane and submits it there, returning the batch's id.
func submitLines(t *testing.T, p *budgetPlanes, key string, n int) string {
	t.Helper()
	var jsonl strings.Builder
	for i := range n {
		fmt.Fprintf(&jsonl, `{"custom_id":"r%d","method":"POST","url":"/v1/chat/completions","body":{"model":"openai/gpt-4o-mini","max_tokens":20,"messages":[{"role":"user","content":"hi r%d"}]}}`+"\n", i, i)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "big.jsonl")
	_, _ = fw.Write([]byte(jsonl.String()))
	_ = mw.Close()
	var file struct{ ID string }
	infCall(t, "POST", p.dps[0].URL+"/inf/v1/files", key, mw.FormDataContentType(), &body, &file)
	var batch struct{ ID, Status string }
	infCall(t, "POST", p.dps[0].URL+"/inf/v1/batches", key, "application/json",
		strings.NewReader(`{"input_file_id":"`+file.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), &batch)
	return batch.ID
}

func infCall(t *testing.T, method, url, key, contentType string, body io.Reader, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

// takenBy are the data planes that took the batch's lines, read from the
// control plane's SQLite database.
func takenBy(t *testing.T, p *budgetPlanes, batchID string) []string {
	t.Helper()
	var dir string
	for _, kv := range p.cpEnv {
		if v, ok := strings.CutPrefix(kv, "GW_DATA_DIR="); ok {
			dir = v
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "gw.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT DISTINCT taken_by FROM batch_lines WHERE batch_id = ? ORDER BY taken_by`, batchID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s.String)
	}
	return out
}

// TestRemoteBatchesSurviveControlPlaneRestart: two remote data planes run
// an 80-line batch; the control plane is killed (SIGKILL) while they do,
// and started again a second later. The batch completes with every line,
// each line reached the upstream once (a take whose answer was lost is
// given back, an end the control plane did not take is sent again), and
// the control plane records one usage event per line.
func TestRemoteBatchesSurviveControlPlaneRestart(t *testing.T) {
	ctx := context.Background()
	fake := providerstest.NewOpenAI(t, "sk-upstream-remote-batches-cp")
	fake.SetDefault(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 12, Output: 5}})
	p := startBudgetPlanes(t, storetest.SQLite, "remotebatchescp")
	p.dpEnv = []string{"GW_BATCH_PACE=20ms"}
	// The planes' runners send the lines one by one (gateway mode), so
	// the kill cuts the batch between lines.
	if _, err := p.owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"),
		wire.ProviderCredentialCreate{Provider: "openai", Label: "fake", Secret: fake.Key, BaseURL: fake.BaseURL(),
			Settings: &wire.CredentialSettings{Batches: "gateway"}}); err != nil {
		t.Fatal(err)
	}
	ik, err := p.owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "batches"})
	if err != nil {
		t.Fatal(err)
	}
	p.startDataPlanes(t, "dp-1", "dp-2")

	const n = 80
	id := submitLines(t, p, ik.Token, n)
	waitFor(t, "a quarter of the lines sent", func() bool { return len(fake.Requests()) >= n/4 })
	p.killControlPlane()
	if at := len(fake.Requests()); at >= n {
		t.Fatalf("every line was sent before the kill (%d): the test did not cut the batch", at)
	} else {
		t.Logf("the control plane killed after %d of %d lines", at, n)
	}
	time.Sleep(time.Second)
	p.restartControlPlane(t)
	var batch struct {
		Status        string
		RequestCounts struct{ Completed, Failed int } `json:"request_counts"`
	}
	waitFor(t, "the batch to complete after the restart", func() bool {
		req, _ := http.NewRequest("GET", p.dps[1].URL+"/inf/v1/batches/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+ik.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&batch) == nil && batch.Status == "completed"
	})
	if batch.RequestCounts.Completed != n || batch.RequestCounts.Failed != 0 {
		t.Fatalf("after the restart: %+v", batch)
	}
	sent := map[int]int{}
	for _, r := range fake.Requests() {
		var i int
		if _, err := fmt.Sscanf(string(r.Raw)[strings.Index(string(r.Raw), `"hi r`)+5:], "%d", &i); err == nil {
			sent[i]++
		}
	}
	for i := range n {
		if sent[i] != 1 {
			t.Errorf("line r%d reached the upstream %d times", i, sent[i])
		}
	}
	waitFor(t, "one usage event per line", func() bool {
		events := batchEvents(t, p)
		seen := map[string]bool{}
		for _, e := range events {
			if e.RequestID == nil || seen[*e.RequestID] || e.BatchID == nil || *e.BatchID != id {
				return false
			}
			seen[*e.RequestID] = true
		}
		return len(events) == n
	})
	time.Sleep(time.Second)
	if events := batchEvents(t, p); len(events) != n {
		t.Fatalf("%d events after the spools shipped again, want %d", len(events), n)
	}
	p.stop(t)
}

// TestRemoteMessageBatchesNode runs e2e/node/messagebatches.mjs (the
// @anthropic-ai/sdk npm package, unchanged) against a remote data plane:
// Anthropic's Message Batches are the same batches, on the control plane's
// store; every request sent leaves one usage event there.
func TestRemoteMessageBatchesNode(t *testing.T) {
	node, dir := nodeWith(t, "@anthropic-ai/sdk")
	ctx := context.Background()
	fake := providerstest.NewAnthropic(t, "sk-ant-upstream-remote-msgbatches")
	fake.SetDefault(providerstest.Reply{Text: "hello from upstream", Usage: providerstest.Usage{Input: 12, Output: 5}})
	p := startBudgetPlanes(t, storetest.SQLite, "remotemsgbatches")
	p.dpEnv = []string{"GW_BATCH_PACE=20ms"}
	if _, err := p.owner.CreateCredential(ctx, client.WorkspaceScope("default", "default"),
		wire.ProviderCredentialCreate{Provider: "anthropic", Label: "fake", Secret: fake.Key, BaseURL: fake.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	ik, err := p.owner.CreateInferenceKey(ctx, "default", "default", wire.InferenceKeyCreate{Name: "message-batches"})
	if err != nil {
		t.Fatal(err)
	}
	p.startDataPlanes(t, "dp-1")
	runBatchScript(t, node, dir, "messagebatches.mjs", p.dps[0], ik.Token)
	waitFor(t, "one usage event per request sent", func() bool {
		events := batchEvents(t, p)
		seen := map[string]bool{}
		for _, e := range events {
			if e.RequestID == nil || seen[*e.RequestID] {
				return false
			}
			seen[*e.RequestID] = true
		}
		return len(events) == len(fake.Requests()) && len(events) >= 3
	})
	p.stop(t)
}

// remoteBigBatch runs a 60-line batch through both planes
// (runBothPlanes) and holds it to each line reaching the upstream once and
// both planes taking lines; it returns the batch's id.
func remoteBigBatch(t *testing.T, p *budgetPlanes, fake *providerstest.OpenAI, key string) string {
	t.Helper()
	big := runBothPlanes(t, p, key, 60)
	sentOf := map[string]int{}
	for _, r := range fake.Requests() {
		sentOf[string(r.Raw)]++
	}
	for i := range 60 {
		n := 0
		for raw, c := range sentOf {
			if strings.Contains(raw, fmt.Sprintf(`"hi r%d"`, i)) {
				n += c
			}
		}
		if n != 1 {
			t.Errorf("line r%d reached the upstream %d times", i, n)
		}
	}
	planes := takenBy(t, p, big)
	t.Logf("the 60 lines were taken by %v", planes)
	if len(planes) != 2 || planes[0] != "dp-1" || planes[1] != "dp-2" {
		t.Errorf("the 60 lines were taken by %v: want both planes running the batch", planes)
	}
	return big
}
