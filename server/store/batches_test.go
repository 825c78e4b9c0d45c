package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// A workspace's files and batches are found only with its own id: another
// workspace's, of the same organization or another, is ErrNotFound for
// every read, list, delete and cancel.
func TestBatchFilesAreTheWorkspaces(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		acme, other := fixture.NewOrg(t, st, fixture.Keyring(t), "acme"), fixture.NewOrg(t, st, fixture.Keyring(t), "other")
		ws, sibling, foreign := acme.Workspace("main"), acme.Workspace("side"), other.Workspace("main")
		now := store.Now()
		body := []byte("{\"custom_id\":\"a\"}\n\x00\xff")
		for i, f := range []*store.BatchFile{
			{ID: "file-1", OrgID: acme.ID, WorkspaceID: ws, Purpose: "batch", Filename: "in.jsonl", Bytes: int64(len(body)), Content: body, CreatedAt: now.Add(-2 * time.Second)},
			{ID: "file-2", OrgID: acme.ID, WorkspaceID: ws, Purpose: "batch_output", Filename: "out.jsonl", Bytes: 1, Content: []byte("x"), CreatedAt: now.Add(-time.Second)},
			{ID: "file-3", OrgID: acme.ID, WorkspaceID: ws, Purpose: "batch", Filename: "b.jsonl", Bytes: 1, Content: []byte("y"), CreatedAt: now},
		} {
			if err := st.CreateBatchFile(ctx, f); err != nil {
				t.Fatalf("file %d: %v", i, err)
			}
		}
		if err := st.CreateBatchFile(ctx, &store.BatchFile{ID: "file-1", OrgID: other.ID, WorkspaceID: foreign, Purpose: "batch", Content: []byte{}, CreatedAt: now}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a taken id: %v", err)
		}
		f, err := st.BatchFile(ctx, ws, "file-1")
		if err != nil || string(f.Content) != string(body) || f.Filename != "in.jsonl" || f.Bytes != int64(len(body)) {
			t.Fatalf("file: %+v %v", f, err)
		}
		for name, other := range map[string]func() error{
			"read":   func() error { _, err := st.BatchFile(ctx, sibling, "file-1"); return err },
			"other":  func() error { _, err := st.BatchFile(ctx, foreign, "file-1"); return err },
			"delete": func() error { return st.DeleteBatchFile(ctx, foreign, "file-1", now) },
		} {
			if err := other(); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s across workspaces: %v", name, err)
			}
		}
		if got, err := st.BatchFiles(ctx, foreign, "", "", 10); err != nil || len(got) != 0 {
			t.Errorf("another organization's workspace lists %+v %v", got, err)
		}
		all, err := st.BatchFiles(ctx, ws, "", "", 10)
		if err != nil || len(all) != 3 || all[0].ID != "file-3" || all[2].ID != "file-1" || all[0].Content != nil {
			t.Fatalf("list: %+v %v", all, err)
		}
		page, err := st.BatchFiles(ctx, ws, "batch", "file-3", 10)
		if err != nil || len(page) != 1 || page[0].ID != "file-1" {
			t.Fatalf("page after file-3 of purpose batch: %+v %v", page, err)
		}
		if err := st.DeleteBatchFile(ctx, ws, "file-1", now); err != nil {
			t.Fatal(err)
		}
		if _, err := st.BatchFile(ctx, ws, "file-1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a deleted file reads: %v", err)
		}
		if err := st.DeleteBatchFile(ctx, ws, "file-1", now); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a second delete: %v", err)
		}

		// Batches: created with their lines, found by their workspace only.
		ids := make([]string, 1203) // more lines than one INSERT carries
		for i := range ids {
			ids[i] = fmt.Sprintf("req-%d", i+1)
		}
		b := &store.Batch{ID: "batch_1", OrgID: acme.ID, WorkspaceID: ws, Endpoint: "/v1/chat/completions", InputFileID: "file-3",
			CompletionWindow: "24h", Status: store.BatchInProgress, ReservedNanoUSD: 42, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateBatch(ctx, b, ids); err != nil {
			t.Fatal(err)
		}
		for name, fn := range map[string]func() error{
			"read":   func() error { _, err := st.Batch(ctx, sibling, "batch_1"); return err },
			"other":  func() error { _, err := st.Batch(ctx, foreign, "batch_1"); return err },
			"cancel": func() error { _, err := st.CancelBatch(ctx, foreign, "batch_1", now); return err },
		} {
			if err := fn(); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s across workspaces: %v", name, err)
			}
		}
		if got, err := st.Batches(ctx, sibling, false, "", "", 10); err != nil || len(got) != 0 {
			t.Errorf("a sibling workspace lists %+v %v", got, err)
		}
		if got, err := st.Batches(ctx, ws, false, "", "", 10); err != nil || len(got) != 1 || got[0].ReservedNanoUSD != 42 {
			t.Errorf("batches: %+v %v", got, err)
		}
		c, err := st.BatchCounts(ctx, "batch_1")
		if err != nil || c != (store.BatchCounts{Total: 1203}) {
			t.Fatalf("counts %+v %v", c, err)
		}
	})
}

// A batch's lines are taken in order, each once: a line started is
// running under its request id (a restart finds it so, never pending
// again), its outcome is recorded once, and a cancel leaves the running
// line to end while no pending one is ever taken.
func TestBatchLinesRunOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		org := fixture.NewOrg(t, st, fixture.Keyring(t), "acme")
		ws := org.Workspace("main")
		now := store.Now()
		b := &store.Batch{ID: "batch_2", OrgID: org.ID, WorkspaceID: ws, Endpoint: "/v1/chat/completions", InputFileID: "file-x",
			CompletionWindow: "24h", Status: store.BatchInProgress, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateBatch(ctx, b, []string{"a", "b", "c", "d"}); err != nil {
			t.Fatal(err)
		}
		l1, ok, err := st.StartBatchLine(ctx, "batch_2", "req-1", now)
		if err != nil || !ok || l1.Line != 1 || l1.CustomID != "a" || *l1.RequestID != "req-1" {
			t.Fatalf("first line: %+v %v %v", l1, ok, err)
		}
		// A second store on the same database (a restarted process) takes
		// the next line, never the running one.
		again := store.New(db)
		l2, ok, err := again.StartBatchLine(ctx, "batch_2", "req-2", now)
		if err != nil || !ok || l2.Line != 2 {
			t.Fatalf("second line: %+v %v %v", l2, ok, err)
		}
		body := `{"id":"chatcmpl-1"}`
		l1.Status, l1.StatusCode, l1.Response, l1.CostNanoUSD = store.LineCompleted, 200, &body, 1234
		if done, err := st.EndBatchLine(ctx, l1, now); err != nil || !done {
			t.Fatalf("end: %v %v", done, err)
		}
		if done, err := st.EndBatchLine(ctx, l1, now); err != nil || done {
			t.Fatalf("a line ended twice: %v %v", done, err)
		}
		got, err := st.CancelBatch(ctx, ws, "batch_2", now)
		if err != nil || got.Status != store.BatchCancelling {
			t.Fatalf("cancel with a line running: %+v %v", got, err)
		}
		if _, ok, err := st.StartBatchLine(ctx, "batch_2", "req-3", now); err != nil || ok {
			t.Fatalf("a cancelled batch gave a line: %v %v", ok, err)
		}
		msg := "upstream failed"
		l2.Status, l2.StatusCode, l2.Error = store.LineFailed, 502, &msg
		if done, err := st.EndBatchLine(ctx, l2, now); err != nil || !done {
			t.Fatalf("end: %v %v", done, err)
		}
		c, err := st.BatchCounts(ctx, "batch_2")
		if err != nil || c != (store.BatchCounts{Total: 4, Completed: 1, Failed: 1, Cancelled: 2}) {
			t.Fatalf("counts %+v %v", c, err)
		}
		lines, err := st.BatchLines(ctx, "batch_2", 1, 10)
		if err != nil || len(lines) != 3 || lines[0].Line != 2 || *lines[0].Error != msg || lines[1].Status != store.LineCancelled || lines[1].CostNanoUSD != 0 {
			t.Fatalf("lines: %+v %v", lines, err)
		}
		if first, _ := st.BatchLines(ctx, "batch_2", 0, 1); len(first) != 1 || *first[0].Response != body || first[0].CostNanoUSD != 1234 {
			t.Fatalf("first line: %+v", first)
		}
	})
}

// A batch's provider batch groups are stored with it: their lines are in
// the group (status upstream, their request ids fixed), never taken by
// the gw runner nor interrupted at a restart; a group moves on from a
// state once (UpdateBatchUpstream), and a cancel leaves the batch
// cancelling until the provider's lines end.
func TestBatchUpstreamGroups(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		org := fixture.NewOrg(t, st, fixture.Keyring(t), "acme")
		ws := org.Workspace("main")
		now := store.Now()
		cred := uuid.New()
		b := &store.Batch{ID: "batch_3", OrgID: org.ID, WorkspaceID: ws, Endpoint: "/v1/chat/completions", InputFileID: "file-x",
			CompletionWindow: "24h", Status: store.BatchInProgress, CreatedAt: now, UpdatedAt: now,
			Upstreams: []store.BatchUpstream{{Seq: 1, Kind: "openai", CredentialID: cred, Model: "openai/gpt-4o-mini", UpstreamModel: "gpt-4o-mini",
				Lines: []store.UpstreamLine{{Line: 1, RequestID: "req-a"}, {Line: 3, RequestID: "req-c"}}}}}
		if err := st.CreateBatch(ctx, b, []string{"a", "b", "c"}); err != nil {
			t.Fatal(err)
		}
		groups, err := st.BatchUpstreams(ctx, "batch_3")
		if err != nil || len(groups) != 1 || groups[0].Status != store.UpstreamPending || groups[0].CredentialID != cred {
			t.Fatalf("groups: %+v %v", groups, err)
		}
		lines, err := st.UpstreamBatchLines(ctx, "batch_3", 1)
		if err != nil || len(lines) != 2 || lines[0].Line != 1 || *lines[0].RequestID != "req-a" || lines[1].Line != 3 || lines[1].Status != store.LineUpstream {
			t.Fatalf("group lines: %+v %v", lines, err)
		}
		// The gw runner takes line 2 only; a restart interrupts nothing of
		// the group.
		l, ok, err := st.StartBatchLine(ctx, "batch_3", "req-b", now)
		if err != nil || !ok || l.Line != 2 {
			t.Fatalf("runner's line: %+v %v %v", l, ok, err)
		}
		if _, ok, _ := st.StartBatchLine(ctx, "batch_3", "req-x", now); ok {
			t.Fatal("the runner took a line of a provider batch")
		}
		if n, err := st.InterruptBatchLines(ctx, "batch_3", now.Add(time.Hour), now, "interrupted"); err != nil || n != 1 {
			t.Fatalf("interrupted %d lines (%v), want only the runner's", n, err)
		}
		g := groups[0]
		file, at := "file-up", now
		g.Status, g.UpstreamFileID, g.SubmittingAt = store.UpstreamSubmitting, &file, &at
		if ok, err := st.UpdateBatchUpstream(ctx, g, store.UpstreamPending, now); err != nil || !ok {
			t.Fatalf("to submitting: %v %v", ok, err)
		}
		// The same step repeated (its answer lost) is answered true; another
		// process's step from pending (its own upload, its own time) false.
		if ok, err := st.UpdateBatchUpstream(ctx, g, store.UpstreamPending, now); err != nil || !ok {
			t.Fatalf("a repeated step: %v %v", ok, err)
		}
		other, otherAt := "file-other", at.Add(time.Millisecond)
		g2 := g
		g2.UpstreamFileID, g2.SubmittingAt = &other, &otherAt
		if ok, err := st.UpdateBatchUpstream(ctx, g2, store.UpstreamPending, now); err != nil || ok {
			t.Fatalf("a group left pending twice: %v %v", ok, err)
		}
		g3 := g
		g3.UpstreamFileID, g3.SubmittingAt = nil, &otherAt
		if ok, err := st.UpdateBatchUpstream(ctx, g3, store.UpstreamPending, now); err != nil || ok {
			t.Fatalf("a group left pending twice with no upload (Anthropic): %v %v", ok, err)
		}
		got, err := st.CancelBatch(ctx, ws, "batch_3", now)
		if err != nil || got.Status != store.BatchCancelling {
			t.Fatalf("cancel with lines at the provider: %+v %v", got, err)
		}
		lines[0].Status = store.LineCompleted
		if done, err := st.EndBatchLine(ctx, lines[0], now); err != nil || !done {
			t.Fatalf("end a provider line: %v %v", done, err)
		}
		if done, _ := st.EndBatchLine(ctx, lines[0], now); done {
			t.Fatal("a provider line ended twice")
		}
		c, err := st.BatchCounts(ctx, "batch_3")
		if err != nil || c != (store.BatchCounts{Total: 3, Completed: 1, Failed: 1}) {
			t.Fatalf("counts %+v %v", c, err)
		}
	})
}

// A batch's completion window ending expires its pending lines only: a
// line running ends as it would have, its outcome recorded once; a line
// in a provider batch is left to that provider; an expired line is never
// taken; expiring again changes nothing.
func TestBatchLinesExpire(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		st := store.New(db)
		org := fixture.NewOrg(t, st, fixture.Keyring(t), "acme")
		ws := org.Workspace("main")
		now := store.Now()
		b := &store.Batch{ID: "batch_4", OrgID: org.ID, WorkspaceID: ws, Endpoint: "/v1/chat/completions", InputFileID: "file-x",
			CompletionWindow: "24h", Status: store.BatchInProgress, CreatedAt: now, UpdatedAt: now,
			Upstreams: []store.BatchUpstream{{Seq: 1, Kind: "openai", CredentialID: uuid.New(), Model: "openai/gpt-4o-mini", UpstreamModel: "gpt-4o-mini",
				Lines: []store.UpstreamLine{{Line: 4, RequestID: "req-d"}}}}}
		if err := st.CreateBatch(ctx, b, []string{"a", "b", "c", "d"}); err != nil {
			t.Fatal(err)
		}
		running, ok, err := st.StartBatchLine(ctx, "batch_4", "req-a", now)
		if err != nil || !ok || running.Line != 1 {
			t.Fatalf("first line: %+v %v %v", running, ok, err)
		}
		later := now.Add(24 * time.Hour)
		if n, err := st.ExpireBatchLines(ctx, "batch_4", later); err != nil || n != 2 {
			t.Fatalf("expired %d lines (%v), want the 2 pending", n, err)
		}
		if n, err := st.ExpireBatchLines(ctx, "batch_4", later); err != nil || n != 0 {
			t.Fatalf("expired again: %d %v", n, err)
		}
		if _, ok, err := st.StartBatchLine(ctx, "batch_4", "req-x", later); err != nil || ok {
			t.Fatalf("an expired line was taken: %v %v", ok, err)
		}
		body := `{"id":"chatcmpl-1"}`
		running.Status, running.StatusCode, running.Response, running.CostNanoUSD = store.LineCompleted, 200, &body, 99
		if done, err := st.EndBatchLine(ctx, running, later); err != nil || !done {
			t.Fatalf("the running line's end: %v %v", done, err)
		}
		c, err := st.BatchCounts(ctx, "batch_4")
		if err != nil || c != (store.BatchCounts{Total: 4, Completed: 1, Expired: 2}) {
			t.Fatalf("counts %+v %v", c, err)
		}
		lines, err := st.BatchLines(ctx, "batch_4", 0, 10)
		if err != nil || len(lines) != 4 {
			t.Fatalf("lines: %+v %v", lines, err)
		}
		for i, want := range []string{store.LineCompleted, store.LineExpired, store.LineExpired, store.LineUpstream} {
			if lines[i].Status != want || (want == store.LineExpired && (lines[i].RequestID != nil || lines[i].CostNanoUSD != 0)) {
				t.Fatalf("line %d: %+v, want %s", i+1, lines[i], want)
			}
		}
		if done, err := st.FinishBatch(ctx, "batch_4", store.BatchExpired, nil, nil, later); err != nil || !done {
			t.Fatalf("finish expired: %v %v", done, err)
		}
		if got, err := st.Batch(ctx, ws, "batch_4"); err != nil || got.Status != store.BatchExpired {
			t.Fatalf("batch: %+v %v", got, err)
		}
	})
}
