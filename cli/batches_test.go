package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// gw batches list|get|cancel against the real API on both databases: the
// workspace's batches newest first (every page with --all), one read,
// a cancel that asks first and then stops the pending lines; another
// workspace's batch is not found from here.
func TestBatchesCommands(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		ctx := context.Background()
		mk := func(ws uuid.UUID, lines int, at time.Time) string {
			id := "batch_" + strings.ReplaceAll(uuid.NewString(), "-", "")
			ids := make([]string, lines)
			for i := range ids {
				ids[i] = fmt.Sprintf("r%d", i)
			}
			b := &store.Batch{ID: id, OrgID: e.boot.Organization.ID, WorkspaceID: ws, Endpoint: "/v1/chat/completions", InputFileID: "file-in",
				CompletionWindow: "24h", Status: store.BatchInProgress, ReservedNanoUSD: 250_000_000, CreatedAt: at, UpdatedAt: at}
			if err := e.st.CreateBatch(ctx, b, ids); err != nil {
				t.Fatal(err)
			}
			return id
		}
		if r := e.gw("", "batches", "list"); !strings.Contains(r.errOut, "no batches") {
			t.Fatalf("empty list: %+v", r)
		}
		at := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		old, mid, newest := mk(e.boot.Workspace.ID, 3, at), mk(e.boot.Workspace.ID, 1, at.Add(time.Minute)), mk(e.boot.Workspace.ID, 2, at.Add(2*time.Minute))

		bs := decodeJSONOut[[]wire.Batch](t, e.ok("batches", "list", "--limit", "2", "--all", "-o", "json"))
		if len(bs) != 3 || bs[0].ID != newest || bs[1].ID != mid || bs[2].ID != old {
			t.Fatalf("list --all: %+v", bs)
		}
		mustContain(t, "list", e.ok("batches", "list"), newest+"\tin_progress\t/v1/chat/completions\t0/2 done, 0 failed, 0 cancelled\t0.25")
		b := decodeJSONOut[wire.Batch](t, e.ok("batches", "get", old, "-o", "json"))
		if b.ID != old || b.RequestCounts.Total != 3 || b.ReservedUSD != "0.25" {
			t.Fatalf("get: %+v", b)
		}

		// Cancel asks first: without a terminal and --yes nothing changes.
		e.code(ExitUsage, "", "batches", "cancel", old)
		if b := decodeJSONOut[wire.Batch](t, e.ok("batches", "get", old, "-o", "json")); b.Status != "in_progress" {
			t.Fatalf("a refused cancel changed the batch: %+v", b)
		}
		mustContain(t, "cancel", e.ok("batches", "cancel", old, "--yes"), "cancelled", "0/3 done, 0 failed, 3 cancelled")

		// Another workspace's batch is not found from this one.
		other := decodeJSONOut[wire.Workspace](t, e.ok("workspaces", "create", "--name", "Other", "--slug", "other", "-o", "json"))
		theirs := mk(other.ID, 1, at)
		r := e.code(ExitError, "", "batches", "get", theirs)
		mustContain(t, "another workspace's", r.errOut, "not found")
		e.code(ExitError, "", "batches", "cancel", theirs, "--yes")
		if b := decodeJSONOut[wire.Batch](t, e.ok("batches", "get", theirs, "--workspace", "other", "-o", "json")); b.Status != "in_progress" {
			t.Fatalf("the other workspace's batch: %+v", b)
		}
	})
}
