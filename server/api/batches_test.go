package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/wire"
)

// TestBatches: a workspace's batches as the control plane shows them —
// listed newest first a page at a time, read, cancelled (audited) — and
// confined to the workspace: another workspace's or organization's batch
// id is a 404 for reading and cancelling, and nothing of it changes.
func TestBatches(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		sib := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{"name": "Sib", "slug": "sib"}))
		other := decodeData[wire.Organization](t, e.must("POST", "/api/v1/organizations", e.ownerKey, map[string]any{"name": "Other", "slug": "other"}))
		otherWS := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/other/workspaces", e.ownerKey, map[string]any{"name": "O", "slug": "o-main"}))
		base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
		mk := func(org, ws uuid.UUID, n int, at time.Time) string {
			id := "batch_" + strings.ReplaceAll(uuid.NewString(), "-", "")
			b := &store.Batch{ID: id, OrgID: org, WorkspaceID: ws, Endpoint: "/v1/chat/completions", InputFileID: "file-x",
				CompletionWindow: "24h", Status: store.BatchInProgress, ReservedNanoUSD: 1_500_000_000, CreatedAt: at, UpdatedAt: at}
			lines := make([]string, n)
			for i := range lines {
				lines[i] = fmt.Sprintf("r%d", i)
			}
			if err := e.st.CreateBatch(ctx, b, lines); err != nil {
				t.Fatal(err)
			}
			return id
		}
		mine := []string{mk(e.boot.Organization.ID, e.boot.Workspace.ID, 3, base), mk(e.boot.Organization.ID, e.boot.Workspace.ID, 2, base.Add(time.Minute)),
			mk(e.boot.Organization.ID, e.boot.Workspace.ID, 1, base.Add(2*time.Minute))}
		sibling := mk(e.boot.Organization.ID, sib.ID, 2, base)
		foreign := mk(other.ID, otherWS.ID, 2, base)

		// list follows a list's pages from path (which has a query) to the
		// end: the ids, newest first.
		list := func(path string) (ids []string) {
			for pages := 0; path != ""; pages++ {
				if pages > 3 {
					t.Fatal("the pages never end")
				}
				var p wire.Page[wire.Batch]
				if err := jsonUnmarshal(e.must("GET", path, e.ownerKey, nil), &p); err != nil {
					t.Fatal(err)
				}
				for _, b := range p.Data {
					ids = append(ids, b.ID)
				}
				base, _, _ := strings.Cut(path, "&cursor=")
				path = ""
				if p.Page.NextCursor != nil {
					path = base + "&cursor=" + *p.Page.NextCursor
				}
			}
			return ids
		}

		// Newest first, two at a time.
		if seen, want := list(wsBase+"/batches?limit=2"), []string{mine[2], mine[1], mine[0]}; fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Fatalf("list: %v, want %v", seen, want)
		}

		b := decodeData[wire.Batch](t, e.must("GET", wsBase+"/batches/"+mine[0], e.ownerKey, nil))
		if b.Status != "in_progress" || b.RequestCounts.Total != 3 || b.ReservedUSD != "1.5" || b.Endpoint != "/v1/chat/completions" ||
			b.InputFileID != "file-x" || b.WorkspaceID != e.boot.Workspace.ID || b.CompletedAt != nil {
			t.Fatalf("get: %+v", b)
		}

		// Across tenants: the sibling workspace's and the other
		// organization's batches are not found from here, and the other way
		// round; a malformed id is not found either.
		for _, c := range []struct{ base, id string }{
			{wsBase, sibling}, {wsBase, foreign}, {wsBase, "nope"},
			{"/api/v1/organizations/default/workspaces/sib", mine[0]},
			{"/api/v1/organizations/other/workspaces/o-main", mine[0]},
		} {
			if st, raw := e.do("GET", c.base+"/batches/"+c.id, e.ownerKey, nil); st != 404 {
				t.Errorf("GET %s of %s: %d %s", c.id, c.base, st, raw)
			}
			if st, raw := e.do("POST", c.base+"/batches/"+c.id+"/cancel", e.ownerKey, nil); st != 404 {
				t.Errorf("cancel %s of %s: %d %s", c.id, c.base, st, raw)
			}
		}
		var p wire.Page[wire.Batch]
		if err := jsonUnmarshal(e.must("GET", "/api/v1/organizations/other/workspaces/o-main/batches", e.ownerKey, nil), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Data) != 1 || p.Data[0].ID != foreign || p.Data[0].Status != "in_progress" {
			t.Fatalf("the other organization's list: %+v", p.Data)
		}
		if sb, err := e.st.Batch(ctx, sib.ID, sibling); err != nil || sb.Status != store.BatchInProgress {
			t.Fatalf("the sibling's batch after the refused cancels: %+v %v", sb, err)
		}

		// A reader (usage.read) lists and reads but does not cancel;
		// cancelling takes inference-keys.manage.
		reader := e.key(wsBase, e.ownerKey, []string{"usage.read"}, nil).Token
		e.must("GET", wsBase+"/batches/"+mine[1], reader, nil)
		if st, raw := e.do("POST", wsBase+"/batches/"+mine[1]+"/cancel", reader, nil); st != 403 {
			t.Fatalf("cancel with usage.read only: %d %s", st, raw)
		}
		canceller := e.key(wsBase, e.ownerKey, []string{"inference-keys.manage"}, nil).Token
		if st, raw := e.do("GET", wsBase+"/batches", canceller, nil); st != 403 {
			t.Fatalf("list with inference-keys.manage only: %d %s", st, raw)
		}

		// Cancel: every pending line cancelled, the batch ended, audited
		// once; a second cancel answers it as it is.
		c := decodeData[wire.Batch](t, e.must("POST", wsBase+"/batches/"+mine[0]+"/cancel", e.ownerKey, nil))
		if c.Status != "cancelled" || c.RequestCounts.Cancelled != 3 || c.CompletedAt == nil {
			t.Fatalf("cancel: %+v", c)
		}
		a := e.lastAudit("batch.cancelled")
		if a == nil || a.Target.ID != mine[0] || a.Target.Type != "batch" {
			t.Fatalf("audit: %+v", a)
		}
		n := len(e.auditEvents())
		if again := decodeData[wire.Batch](t, e.must("POST", wsBase+"/batches/"+mine[0]+"/cancel", e.ownerKey, nil)); again.Status != "cancelled" {
			t.Fatalf("second cancel: %+v", again)
		}
		if len(e.auditEvents()) != n {
			t.Fatal("a cancel that changed nothing was audited")
		}

		// Anthropic's message batches are their own list (kind=
		// message_batch), paged by their own ids; the default list and
		// kind=batch hold none of them. A message batch is read by its id.
		mk2 := func(at time.Time) string {
			id := "msgbatch_" + strings.ReplaceAll(uuid.NewString(), "-", "")
			b := &store.Batch{ID: id, OrgID: e.boot.Organization.ID, WorkspaceID: e.boot.Workspace.ID, Endpoint: store.MessagesEndpoint,
				InputFileID: "file-m", CompletionWindow: "24h", Status: store.BatchInProgress, CreatedAt: at, UpdatedAt: at}
			if err := e.st.CreateBatch(ctx, b, []string{"a"}); err != nil {
				t.Fatal(err)
			}
			return id
		}
		msgs := []string{mk2(base), mk2(base.Add(time.Minute)), mk2(base.Add(2 * time.Minute))}
		if got, want := list(wsBase+"/batches?kind=message_batch&limit=2"), []string{msgs[2], msgs[1], msgs[0]}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("message batches: %v, want %v", got, want)
		}
		if got, want := list(wsBase+"/batches?kind=batch&limit=2"), []string{mine[2], mine[1], mine[0]}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("kind=batch: %v, want %v", got, want)
		}
		if m := decodeData[wire.Batch](t, e.must("GET", wsBase+"/batches/"+msgs[0], e.ownerKey, nil)); m.Endpoint != store.MessagesEndpoint {
			t.Fatalf("a message batch: %+v", m)
		}
		if got := list("/api/v1/organizations/default/workspaces/sib/batches?kind=message_batch"); len(got) != 0 {
			t.Fatalf("the sibling workspace lists this one's message batches: %v", got)
		}
		// A cursor of one kind's list does not page the other's.
		var p1 wire.Page[wire.Batch]
		if err := jsonUnmarshal(e.must("GET", wsBase+"/batches?kind=message_batch&limit=1", e.ownerKey, nil), &p1); err != nil || p1.Page.NextCursor == nil {
			t.Fatalf("first page of message batches: %+v %v", p1, err)
		}
		if st, raw := e.do("GET", wsBase+"/batches?kind=batch&cursor="+*p1.Page.NextCursor, e.ownerKey, nil); st < 400 || st >= 500 {
			t.Fatalf("a message batch cursor on the batch list: %d %s", st, raw)
		}
		if st, raw := e.do("GET", wsBase+"/batches?kind=messages", e.ownerKey, nil); st != 422 || !strings.Contains(string(raw), "kind") {
			t.Fatalf("kind=messages: %d %s", st, raw)
		}

		// Bad paging is a 422, never a 500.
		if st, raw := e.do("GET", wsBase+"/batches?limit=0", e.ownerKey, nil); st != 422 {
			t.Fatalf("limit=0: %d %s", st, raw)
		}
		if st, raw := e.do("GET", wsBase+"/batches?cursor=x", e.ownerKey, nil); st < 400 || st >= 500 {
			t.Fatalf("bad cursor: %d %s", st, raw)
		}
	})
}
