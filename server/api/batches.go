package api

import (
	"encoding/hex"
	"strings"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/auth"
	"github.com/gw-gateway/gw/server/backend"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/validate"
	"github.com/gw-gateway/gw/wire"
)

// batchRoutes are a workspace's batches (issue 34) as the control plane
// shows them: read with usage.read (a batch is spending, seen as the
// usage is), cancelled with inference-keys.manage (stopping a key's
// spending, as revoking it does). Submitting one is the data plane's
// (POST /inf/v1/batches, with an inference key).
func (s *Server) batchRoutes() []*Route {
	const tag, base = "Workspace Batches", orgWS + "/{workspace_ref}/batches"
	return []*Route{
		{Method: "GET", Path: base, Tag: tag, Summary: "List the workspace's batches, newest first",
			Perms: []auth.Permission{auth.UsageRead}, Result: wire.Batch{}, Paginated: true,
			Query: []QueryParam{
				{Name: "limit", Description: "Page size, 1 to 200 (default 50).", Integer: true},
				{Name: "cursor", Description: "The opaque page.next_cursor of the previous page."},
				{Name: "kind", Description: "batch (the default: OpenAI-shape batches, POST /inf/v1/batches) or message_batch (Anthropic's Message Batches, POST /inf/v1/messages/batches).",
					Enum: batchKinds},
			}, Handle: s.listBatches},
		{Method: "GET", Path: base + "/{batch_id}", Tag: tag, Summary: "Get a batch: its status, line counts and reservation",
			Perms: []auth.Permission{auth.UsageRead}, Result: wire.Batch{}, Handle: s.getBatch},
		{Method: "POST", Path: base + "/{batch_id}/cancel", Tag: tag,
			Summary: "Cancel a batch: its pending lines are never sent; a line in flight ends (cancelling, then cancelled)",
			Perms:   []auth.Permission{auth.InferenceKeysManage}, Result: wire.Batch{}, Handle: s.cancelBatch},
	}
}

// batchKinds are the kinds a batch list shows, one at a time: their ids
// page differently (batch_… and msgbatch_…).
var batchKinds = []string{"batch", "message_batch"}

func (s *Server) listBatches(r *Request) (any, error) {
	var errs validate.Errors
	kind := "batch"
	if q := r.R.URL.Query(); q.Has("kind") {
		kind, _ = validate.Literal(q.Get("kind"), validate.Loc{"query", "kind"}, batchKinds, &errs)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	prefix := batchPrefix(kind)
	binding := kind + "s:" + r.WS.ID.String()
	pq, err := r.pageQuery(binding)
	if err != nil {
		return nil, err
	}
	after := ""
	if pq.After != nil {
		after = prefix + hex.EncodeToString(pq.After.ID[:])
	}
	// One more than the page says whether there is a next one.
	bs, err := s.store.Batches(r.ctx, r.WS.ID, kind == "message_batch", after, "", pq.Limit+1)
	if err != nil {
		return nil, err
	}
	var next *store.PageKey
	if len(bs) > pq.Limit {
		bs = bs[:pq.Limit]
		last := bs[len(bs)-1]
		if id, ok := batchUUID(last.ID, prefix); ok {
			next = &store.PageKey{CreatedAt: last.CreatedAt, ID: id}
		}
	}
	out := make([]wire.Batch, len(bs))
	for i := range bs {
		if out[i], err = s.toBatch(r, &bs[i]); err != nil {
			return nil, err
		}
	}
	return page[wire.Batch]{items: out, next: r.nextCursor(binding, next)}, nil
}

func (s *Server) getBatch(r *Request) (any, error) {
	b, err := backend.BatchIn(r.ctx, s.store, r.WS.ID, r.R.PathValue("batch_id"))
	if err != nil {
		return nil, err
	}
	return s.toBatch(r, b)
}

func (s *Server) cancelBatch(r *Request) (any, error) {
	b, err := backend.CancelBatch(r.ctx, s.store, r.actor(), r.WS.ID, r.R.PathValue("batch_id"))
	if err != nil {
		return nil, err
	}
	return s.toBatch(r, b)
}

func (s *Server) toBatch(r *Request, b *store.Batch) (wire.Batch, error) {
	c, err := s.store.BatchCounts(r.ctx, b.ID)
	if err != nil {
		return wire.Batch{}, err
	}
	out := wire.Batch{ID: b.ID, OrgID: b.OrgID, WorkspaceID: b.WorkspaceID, InferenceKeyID: b.InferenceKeyID, Status: b.Status,
		Endpoint: b.Endpoint, InputFileID: b.InputFileID, OutputFileID: b.OutputFileID, ErrorFileID: b.ErrorFileID,
		RequestCounts: wire.BatchCounts{Total: c.Total, Completed: c.Completed, Failed: c.Failed, Cancelled: c.Cancelled, Expired: c.Expired},
		ReservedUSD:   catalog.FormatNanoUSD(b.ReservedNanoUSD), CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
	switch b.Status {
	case store.BatchCompleted, store.BatchFailed, store.BatchCancelled, store.BatchExpired:
		// The batch's last change is its end.
		t := b.UpdatedAt
		out.CompletedAt = &t
	}
	return out, nil
}

// batchPrefix is the id prefix of a kind's batches: the data plane's
// createBatch names a batch "batch_" and a UUID's 32 hex digits, its
// createMessageBatch "msgbatch_" and the same.
func batchPrefix(kind string) string {
	if kind == "message_batch" {
		return "msgbatch_"
	}
	return "batch_"
}

// batchUUID is the UUID of a batch id of the prefix's kind, which a page
// cursor carries.
func batchUUID(id, prefix string) (uuid.UUID, bool) {
	h, ok := strings.CutPrefix(id, prefix)
	if !ok || len(h) != 32 {
		return uuid.UUID{}, false
	}
	var u uuid.UUID
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return uuid.UUID{}, false
	}
	return u, true
}
