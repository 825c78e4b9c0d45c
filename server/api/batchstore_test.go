package api_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/secrets"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// storePlane is a data plane calling the batch store, through the real
// client (the framing of JSON line and file bytes included).
type storePlane struct {
	t  *testing.T
	c  *client.Client
	id string
}

func (p storePlane) call(op string, req wire.BatchStoreRequest, files ...[]byte) (wire.BatchStoreResult, []byte, error) {
	p.t.Helper()
	if req.Now.IsZero() {
		req.Now = time.Now().UTC()
	}
	return p.c.BatchStore(context.Background(), p.id, op, req, 1<<30, files...)
}

func (p storePlane) must(op string, req wire.BatchStoreRequest, files ...[]byte) (wire.BatchStoreResult, []byte) {
	p.t.Helper()
	out, content, err := p.call(op, req, files...)
	if err != nil {
		p.t.Fatalf("%s as %s: %v", op, p.id, err)
	}
	return out, content
}

// enrollStorePlane enrolls data plane dp for org (its slug) with a key of
// its own holding what a data plane's key holds.
func enrollStorePlane(t *testing.T, e *enrollEnv, org, dp string) storePlane {
	t.Helper()
	tok := e.key("/api/v1/instance", e.ownerKey, []string{"bundles.read", "usage.ingest", "data-planes.heartbeat", "policy-state.sync"}, nil).Token
	k, err := secrets.GenerateDataPlaneKey()
	if err != nil {
		t.Fatal(err)
	}
	e.must("POST", "/api/v1/data-plane/enrollments", tok, map[string]any{"id": dp, "public_key": k.Public().String()})
	if org != "" {
		e.must("POST", "/api/v1/instance/data-planes/enrollments/"+dp+"/approve", e.ownerKey, map[string]any{"organizations": []string{org}})
	}
	return storePlane{t: t, c: storeClient(t, e, tok), id: dp}
}

func storeClient(t *testing.T, e *enrollEnv, token string) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Server: e.srv.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// storeTenant is an organization's workspace, key, file and batch, made
// through its data plane's batch-store calls.
type storeTenant struct {
	org, ws, key uuid.UUID
	file         wire.BatchStoreFile
	batch        string
}

func newStoreTenant(t *testing.T, e *enrollEnv, p storePlane, orgSlug, wsSlug string, content []byte, lines ...string) storeTenant {
	t.Helper()
	ws := decodeData[wire.Workspace](t, e.must("GET", "/api/v1/organizations/"+orgSlug+"/workspaces/"+wsSlug, e.ownerKey, nil))
	key := decodeData[wire.InferenceKey](t, e.must("POST", "/api/v1/organizations/"+orgSlug+"/workspaces/"+wsSlug+"/inference-keys", e.ownerKey,
		map[string]any{"name": "batcher"}))
	now := time.Now().UTC().Truncate(time.Second)
	f := wire.BatchStoreFile{ID: "file-" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: ws.OrgID, WorkspaceID: ws.ID, Purpose: "batch",
		Filename: "in.jsonl", Bytes: int64(len(content)), CreatedAt: now}
	p.must("create-file", wire.BatchStoreRequest{File: &f}, content)
	b := wire.BatchStoreBatch{ID: "batch_" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: ws.OrgID, WorkspaceID: ws.ID, InferenceKeyID: key.ID,
		Endpoint: "/v1/chat/completions", InputFileID: f.ID, CompletionWindow: "24h", Status: "in_progress", CreatedAt: now, UpdatedAt: now}
	p.must("create-batch", wire.BatchStoreRequest{Batch: &b, CustomIDs: lines})
	return storeTenant{org: ws.OrgID, ws: ws.ID, key: key.ID, file: f, batch: b.ID}
}

// batchRows is everything the store holds of a batch: its row, its
// lines, its input file.
func batchRows(t *testing.T, st *store.Store, ten storeTenant) []any {
	t.Helper()
	ctx := context.Background()
	b, err := st.Batch(ctx, ten.ws, ten.batch)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := st.BatchLines(ctx, ten.batch, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.BatchFile(ctx, ten.ws, ten.file.ID)
	if err != nil {
		t.Fatal(err)
	}
	return []any{*b, ls, *f}
}

func isStatus(err error, status int, detail string) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.Status == status && strings.HasPrefix(ae.Detail, detail)
}

// TestBatchStoreConfinesDataPlanes: a data plane enrolled for organization
// A calls every batch-store op on organization B's workspace, file, batch
// and lines (and on B's ids under A's own workspace): each is a 404 "no
// such …", B's rows are exactly as they were, and A's active batches are
// A's only. A plane pending approval, or calling as another plane's id,
// reaches nothing.
func TestBatchStoreConfinesDataPlanes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		e.must("POST", "/api/v1/organizations/b/workspaces", e.ownerKey, map[string]any{"name": "b-main", "slug": "b-main"})
		e.must("POST", "/api/v1/organizations/b/members", e.ownerKey, map[string]any{"user_id": e.boot.User.ID, "role": "owner"})
		pa, pb := enrollStorePlane(t, e, "default", "dp-a"), enrollStorePlane(t, e, "b", "dp-b")
		content := []byte("{\"custom_id\":\"x\"}\n")
		a := newStoreTenant(t, e, pa, "default", "default", content, "a1", "a2")
		b := newStoreTenant(t, e, pb, "b", "b-main", content, "b1", "b2", "b3")
		before := batchRows(t, e.st, b)

		now := time.Now().UTC()
		intoB := wire.BatchStoreFile{ID: "file-" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: b.org, WorkspaceID: b.ws, Purpose: "batch",
			Filename: "x.jsonl", Bytes: int64(len(content)), CreatedAt: now}
		batchInB := wire.BatchStoreBatch{ID: "batch_" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: b.org, WorkspaceID: b.ws, InferenceKeyID: b.key,
			Endpoint: "/v1/chat/completions", InputFileID: b.file.ID, CompletionWindow: "24h", Status: "in_progress", CreatedAt: now, UpdatedAt: now}
		out := wire.BatchStoreFile{ID: "file-" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: b.org, WorkspaceID: b.ws, Purpose: "batch_output",
			Filename: "o.jsonl", Bytes: 2, CreatedAt: now}
		cases := []struct {
			name  string
			op    string
			req   wire.BatchStoreRequest
			files [][]byte
		}{
			{"upload into B's workspace", "create-file", wire.BatchStoreRequest{File: &intoB}, [][]byte{content}},
			{"read B's file", "file", wire.BatchStoreRequest{WorkspaceID: b.ws, ID: b.file.ID}, nil},
			{"read B's file under A's workspace", "file", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: b.file.ID}, nil},
			{"list B's files", "files", wire.BatchStoreRequest{WorkspaceID: b.ws, Limit: 10}, nil},
			{"delete B's file", "delete-file", wire.BatchStoreRequest{WorkspaceID: b.ws, ID: b.file.ID}, nil},
			{"delete B's file under A's workspace", "delete-file", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: b.file.ID}, nil},
			{"submit into B's workspace", "create-batch", wire.BatchStoreRequest{Batch: &batchInB, CustomIDs: []string{"x"}}, nil},
			{"read B's batch", "batch", wire.BatchStoreRequest{WorkspaceID: b.ws, ID: b.batch}, nil},
			{"read B's batch under A's workspace", "batch", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: b.batch}, nil},
			{"list B's batches", "batches", wire.BatchStoreRequest{WorkspaceID: b.ws, Limit: 10}, nil},
			{"cancel B's batch", "cancel", wire.BatchStoreRequest{WorkspaceID: b.ws, ID: b.batch}, nil},
			{"cancel B's batch under A's workspace", "cancel", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: b.batch}, nil},
			{"count B's lines", "counts", wire.BatchStoreRequest{BatchID: b.batch}, nil},
			{"take B's line", "start-line", wire.BatchStoreRequest{BatchID: b.batch, RequestID: uuid.NewString()}, nil},
			{"end B's line", "end-line", wire.BatchStoreRequest{Result: &wire.BatchStoreLine{BatchID: b.batch, Line: 1, Status: "completed", RequestID: "r"}}, nil},
			{"requeue B's line", "requeue", wire.BatchStoreRequest{BatchID: b.batch, Line: 1, RequestID: "r"}, nil},
			{"read B's lines", "lines", wire.BatchStoreRequest{BatchID: b.batch, Limit: 10}, nil},
			{"interrupt B's lines", "interrupt", wire.BatchStoreRequest{BatchID: b.batch, Before: now.Add(time.Hour), Message: "x"}, nil},
			{"expire B's lines", "expire", wire.BatchStoreRequest{BatchID: b.batch, Now: now.Add(25 * time.Hour)}, nil},
			{"finish B's batch", "finish", wire.BatchStoreRequest{BatchID: b.batch, Status: "completed", Output: &out}, [][]byte{[]byte("{}")}},
			{"read B's provider batches", "upstreams", wire.BatchStoreRequest{BatchID: b.batch}, nil},
			{"move B's provider batch on", "update-upstream", wire.BatchStoreRequest{BatchID: b.batch, From: "pending",
				Upstream: &wire.BatchStoreUpstream{BatchID: b.batch, Seq: 1, Status: "ended"}}, nil},
			{"read B's provider batch lines", "upstream-lines", wire.BatchStoreRequest{BatchID: b.batch, Seq: 1}, nil},
			{"delete B's batch", "delete-batch", wire.BatchStoreRequest{WorkspaceID: b.ws, ID: b.batch}, nil},
			{"delete B's batch under A's workspace", "delete-batch", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: b.batch}, nil},
		}
		covered := map[string]bool{"active": true}
		for _, c := range cases {
			covered[c.op] = true
			if _, _, err := pa.call(c.op, c.req, c.files...); !isStatus(err, 404, "no such ") {
				t.Errorf("%s (%s) as A's plane: %v, want 404 no such", c.name, c.op, err)
			}
		}
		for _, op := range wire.BatchStoreOps {
			if !covered[op] {
				t.Errorf("op %s is not tried across tenants", op)
			}
		}
		if after := batchRows(t, e.st, b); !reflect.DeepEqual(before, after) {
			t.Fatalf("B's batch changed:\nbefore %+v\nafter  %+v", before, after)
		}
		if _, err := e.st.BatchFile(context.Background(), b.ws, intoB.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the upload into B's workspace was stored: %v", err)
		}

		// Active: each plane its own organization's batches.
		for _, c := range []struct {
			p    storePlane
			want string
		}{{pa, a.batch}, {pb, b.batch}} {
			got, _ := c.p.must("active", wire.BatchStoreRequest{})
			if len(got.Batches) != 1 || got.Batches[0].ID != c.want {
				t.Errorf("%s's active batches: %+v, want %s only", c.p.id, got.Batches, c.want)
			}
		}
		// A reads its own, bytes as uploaded.
		got, body := pa.must("file", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: a.file.ID})
		if got.File == nil || got.File.ID != a.file.ID || !bytes.Equal(body, content) {
			t.Fatalf("A's own file: %+v %q", got.File, body)
		}
		listed, _ := pa.must("files", wire.BatchStoreRequest{WorkspaceID: a.ws, Limit: 10})
		if len(listed.Files) != 1 || listed.Files[0].ID != a.file.ID || listed.Files[0].Bytes != int64(len(content)) {
			t.Fatalf("A's own files: %+v", listed.Files)
		}

		// A's own batch is not deleted while it runs (409, which the plane
		// answers as Anthropic does).
		if _, _, err := pa.call("delete-batch", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: a.batch}); !isStatus(err, 409, "batch \""+a.batch+"\" has not ended") {
			t.Fatalf("deleting A's batch in progress: %v", err)
		}
		// A expires its own batch's pending lines (its completion window
		// passed), once, and finishes it expired.
		if got, _ := pa.must("expire", wire.BatchStoreRequest{BatchID: a.batch, Now: now.Add(25 * time.Hour)}); got.N != 2 {
			t.Fatalf("A's expired lines: %d, want 2", got.N)
		}
		if got, _ := pa.must("expire", wire.BatchStoreRequest{BatchID: a.batch, Now: now.Add(25 * time.Hour)}); got.N != 0 {
			t.Fatalf("A's lines expired again: %d", got.N)
		}
		if got, _ := pa.must("counts", wire.BatchStoreRequest{BatchID: a.batch}); got.Counts == nil || *got.Counts != (wire.BatchStoreCounts{Total: 2, Expired: 2}) {
			t.Fatalf("A's counts: %+v", got.Counts)
		}
		if got, _ := pa.must("finish", wire.BatchStoreRequest{BatchID: a.batch, Status: "expired", Now: now.Add(25 * time.Hour)}); !got.OK {
			t.Fatal("A's expired batch was not finished")
		}
		// Ended, it is deleted, with its lines; then it is not found.
		if got, _ := pa.must("delete-batch", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: a.batch, Now: now}); !got.OK {
			t.Fatal("A's ended batch was not deleted")
		}
		if _, _, err := pa.call("batch", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: a.batch}); !isStatus(err, 404, "no such batch") {
			t.Fatalf("A's deleted batch: %v", err)
		}
		if _, _, err := pa.call("lines", wire.BatchStoreRequest{BatchID: a.batch, Limit: 10}); !isStatus(err, 404, "no such batch") {
			t.Fatalf("A's deleted batch's lines: %v", err)
		}

		// A plane pending approval reaches nothing; A's key calling as
		// B's plane is refused; a stranger's key too.
		pending := enrollStorePlane(t, e, "", "dp-pending")
		if _, _, err := pending.call("active", wire.BatchStoreRequest{}); !isStatus(err, 403, "") {
			t.Errorf("a pending plane: %v", err)
		}
		asB := storePlane{t: t, c: pa.c, id: "dp-b"}
		if _, _, err := asB.call("active", wire.BatchStoreRequest{}); !isStatus(err, 403, "") {
			t.Errorf("A's key as B's plane: %v", err)
		}
		unknown := storePlane{t: t, c: pa.c, id: "dp-nope"}
		if _, _, err := unknown.call("active", wire.BatchStoreRequest{}); !isStatus(err, 404, "data plane") {
			t.Errorf("a plane never enrolled: %v", err)
		}
		if _, _, err := pa.call("no-such-op", wire.BatchStoreRequest{}); !isStatus(err, 404, "no batch-store op") {
			t.Errorf("an unknown op: %v", err)
		}
	})
}

// TestBatchStoreTakesLinesOnce: two planes of one organization run one
// batch. A take repeated under its request id (a retried call) finds the
// same line; each plane takes its own line; an end or requeue naming
// another take, or repeated, changes nothing; a plane that starts again
// interrupts only the lines it took; a file body over the limit is
// refused before it is read; a finish's files are read back whole.
func TestBatchStoreTakesLinesOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		p1, p2 := enrollStorePlane(t, e, "default", "dp-1"), enrollStorePlane(t, e, "default", "dp-2")
		a := newStoreTenant(t, e, p1, "default", "default", []byte("{}\n"), "l1", "l2", "l3")

		take := func(p storePlane, requestID string) wire.BatchStoreResult {
			t.Helper()
			out, _ := p.must("start-line", wire.BatchStoreRequest{BatchID: a.batch, RequestID: requestID})
			return out
		}
		r1, r2 := uuid.NewString(), uuid.NewString()
		first := take(p1, r1)
		again := take(p1, r1)
		if !first.OK || first.Line == nil || first.Line.Line != 1 || !again.OK || again.Line == nil || again.Line.Line != 1 {
			t.Fatalf("a take and its repeat: %+v %+v", first.Line, again.Line)
		}
		second := take(p2, r2)
		if !second.OK || second.Line.Line != 2 {
			t.Fatalf("the second plane's take: %+v", second.Line)
		}

		// Plane 1 cannot end or requeue plane 2's take, even naming its id.
		if out, _ := p1.must("end-line", wire.BatchStoreRequest{Result: &wire.BatchStoreLine{BatchID: a.batch, Line: 2, Status: "completed", RequestID: r2}}); out.OK {
			t.Fatal("plane 1 ended plane 2's line")
		}
		if out, _ := p1.must("requeue", wire.BatchStoreRequest{BatchID: a.batch, Line: 2, RequestID: r2}); out.OK {
			t.Fatal("plane 1 requeued plane 2's line")
		}
		// Plane 1 starts again: its line is interrupted, plane 2's runs on.
		if out, _ := p1.must("interrupt", wire.BatchStoreRequest{BatchID: a.batch, Before: time.Now().Add(time.Minute), Message: "interrupted"}); out.N != 1 {
			t.Fatalf("interrupted %d lines, want plane 1's one", out.N)
		}
		lines, _ := p2.must("lines", wire.BatchStoreRequest{BatchID: a.batch, Limit: 10})
		if len(lines.Lines) != 3 || lines.Lines[0].Status != "failed" || lines.Lines[1].Status != "running" || lines.Lines[2].Status != "pending" {
			t.Fatalf("lines after plane 1's restart: %+v", lines.Lines)
		}
		// Plane 2 ends its line once; the repeat is no second outcome.
		end := wire.BatchStoreRequest{Result: &wire.BatchStoreLine{BatchID: a.batch, Line: 2, Status: "completed", StatusCode: 200, Response: "{}", RequestID: r2, CostNanoUSD: 7}}
		if out, _ := p2.must("end-line", end); !out.OK {
			t.Fatal("plane 2 could not end its line")
		}
		end.Result.CostNanoUSD = 9
		if out, _ := p2.must("end-line", end); out.OK {
			t.Fatal("a repeated end recorded a second outcome")
		}
		// A requeue of a line taken again since does not put it back.
		r3, r4 := uuid.NewString(), uuid.NewString()
		if out := take(p1, r3); out.Line.Line != 3 {
			t.Fatalf("third take: %+v", out.Line)
		}
		if out, _ := p1.must("requeue", wire.BatchStoreRequest{BatchID: a.batch, Line: 3, RequestID: r3}); !out.OK {
			t.Fatal("requeue of plane 1's own take")
		}
		if out := take(p2, r4); out.Line.Line != 3 {
			t.Fatalf("retake: %+v", out.Line)
		}
		if out, _ := p1.must("requeue", wire.BatchStoreRequest{BatchID: a.batch, Line: 3, RequestID: r3}); out.OK {
			t.Fatal("a repeated requeue put back a line taken again since")
		}
		// A take whose answer was lost is given back by its request id
		// alone (line 0), and only by the plane that took it.
		if out, _ := p1.must("requeue", wire.BatchStoreRequest{BatchID: a.batch, RequestID: r4}); out.OK {
			t.Fatal("plane 1 gave back plane 2's take")
		}
		if out, _ := p2.must("requeue", wire.BatchStoreRequest{BatchID: a.batch, RequestID: r4}); !out.OK {
			t.Fatal("plane 2 could not give back its take by request id")
		}
		r5 := uuid.NewString()
		if out := take(p2, r5); out.Line.Line != 3 {
			t.Fatalf("take after the give-back: %+v", out.Line)
		}
		counts, _ := p1.must("counts", wire.BatchStoreRequest{BatchID: a.batch})
		if counts.Counts == nil || counts.Counts.Total != 3 || counts.Counts.Completed != 1 || counts.Counts.Failed != 1 {
			t.Fatalf("counts: %+v", counts.Counts)
		}
		ls, _ := e.st.BatchLines(context.Background(), a.batch, 0, 10)
		if ls[1].CostNanoUSD != 7 {
			t.Fatalf("line 2's cost %d, want the first outcome's 7", ls[1].CostNanoUSD)
		}

		// A file declared over the limit is refused before its bytes.
		huge := wire.BatchStoreFile{ID: "file-huge", OrgID: a.org, WorkspaceID: a.ws, Purpose: "batch", Filename: "h", Bytes: 201 << 20, CreatedAt: time.Now()}
		if _, _, err := p1.call("create-file", wire.BatchStoreRequest{File: &huge}); !isStatus(err, 413, "") {
			t.Fatalf("a file over 200 MiB: %v", err)
		}

		// Finish with an output and an error file; both read back whole.
		out := []byte(strings.Repeat("o", 300_000))
		errs := []byte("e\n")
		now := time.Now().UTC()
		of := wire.BatchStoreFile{ID: "file-out1", OrgID: a.org, WorkspaceID: a.ws, Purpose: "batch_output", Filename: "o", Bytes: int64(len(out)), CreatedAt: now}
		ef := wire.BatchStoreFile{ID: "file-err1", OrgID: a.org, WorkspaceID: a.ws, Purpose: "batch_output", Filename: "e", Bytes: int64(len(errs)), CreatedAt: now}
		if res, _ := p2.must("finish", wire.BatchStoreRequest{BatchID: a.batch, Status: "completed", Output: &of, Error: &ef}, out, errs); !res.OK {
			t.Fatal("finish")
		}
		for _, f := range []struct {
			id   string
			want []byte
		}{{of.ID, out}, {ef.ID, errs}} {
			got, body := p1.must("file", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: f.id})
			if got.File.Bytes != int64(len(f.want)) || !bytes.Equal(body, f.want) {
				t.Fatalf("file %s read back %d bytes", f.id, len(body))
			}
		}
		b, _ := p1.must("batch", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: a.batch})
		if b.Batch.Status != "completed" || b.Batch.OutputFileID != of.ID || b.Batch.ErrorFileID != ef.ID {
			t.Fatalf("finished batch: %+v", b.Batch)
		}
	})
}

// TestBatchStoreProviderBatches: a batch whose lines run in a provider
// batch is created with its groups only with a credential the workspace
// may use (another organization's is not found); its lines are ended by
// their request id by any plane of the organization, once; its groups
// move on once from a status.
func TestBatchStoreProviderBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		p1, p2 := enrollStorePlane(t, e, "default", "dp-1"), enrollStorePlane(t, e, "default", "dp-2")
		credOf := func(org string) uuid.UUID {
			cs := decodeData[[]struct{ ID uuid.UUID }](t, e.must("GET", "/api/v1/organizations/"+org+"/provider-credentials", e.ownerKey, nil))
			if len(cs) != 1 {
				t.Fatalf("%s's credentials: %+v", org, cs)
			}
			return cs[0].ID
		}
		a := newStoreTenant(t, e, p1, "default", "default", []byte("{}\n"), "x")
		now := time.Now().UTC().Truncate(time.Second)
		mk := func(cred uuid.UUID) (wire.BatchStoreBatch, error) {
			b := wire.BatchStoreBatch{ID: "batch_" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: a.org, WorkspaceID: a.ws, InferenceKeyID: a.key,
				Endpoint: "/v1/chat/completions", InputFileID: a.file.ID, CompletionWindow: "24h", Status: "in_progress", CreatedAt: now, UpdatedAt: now,
				Upstreams: []wire.BatchStoreUpstream{{Seq: 1, Kind: "openai", CredentialID: cred, Model: "openai/gpt-4o-mini", UpstreamModel: "gpt-4o-mini",
					Lines: []wire.BatchStoreUpstreamLine{{Line: 1, RequestID: "req-n1"}, {Line: 2, RequestID: "req-n2"}}}}}
			_, _, err := p1.call("create-batch", wire.BatchStoreRequest{Batch: &b, CustomIDs: []string{"n1", "n2", "n3"}})
			return b, err
		}
		if _, err := mk(credOf("b")); !isStatus(err, 404, "no such credential") {
			t.Fatalf("a provider batch with another organization's credential: %v", err)
		}
		b, err := mk(credOf("default"))
		if err != nil {
			t.Fatal(err)
		}
		us, _ := p2.must("upstreams", wire.BatchStoreRequest{BatchID: b.ID})
		if len(us.Upstreams) != 1 || us.Upstreams[0].Status != "pending" || us.Upstreams[0].CredentialID != b.Upstreams[0].CredentialID {
			t.Fatalf("upstreams: %+v", us.Upstreams)
		}
		move := wire.BatchStoreRequest{BatchID: b.ID, From: "pending", Upstream: &wire.BatchStoreUpstream{BatchID: b.ID, Seq: 1, Status: "submitted", UpstreamID: "batch_up"}}
		if out, _ := p1.must("update-upstream", move); !out.OK {
			t.Fatal("moving the group on")
		}
		// Repeated after its answer was lost, the same step is answered ok;
		// another plane's step (its own provider batch) is not.
		if out, _ := p1.must("update-upstream", move); !out.OK {
			t.Fatal("a repeated step answered as another plane's")
		}
		other := move
		other.Upstream = &wire.BatchStoreUpstream{BatchID: b.ID, Seq: 1, Status: "submitted", UpstreamID: "batch_other"}
		if out, _ := p2.must("update-upstream", other); out.OK {
			t.Fatal("the group moved on twice from pending")
		}
		ls, _ := p2.must("upstream-lines", wire.BatchStoreRequest{BatchID: b.ID, Seq: 1})
		if len(ls.Lines) != 2 || ls.Lines[0].RequestID != "req-n1" || ls.Lines[1].Status != "upstream" {
			t.Fatalf("upstream lines: %+v", ls.Lines)
		}
		end := func(p storePlane, rid string) bool {
			out, _ := p.must("end-line", wire.BatchStoreRequest{Result: &wire.BatchStoreLine{BatchID: b.ID, Line: 1, Status: "completed", StatusCode: 200, RequestID: rid}})
			return out.OK
		}
		if end(p2, "req-n2") {
			t.Fatal("line 1 ended under line 2's request id")
		}
		if !end(p2, "req-n1") || end(p1, "req-n1") {
			t.Fatal("a provider batch's line is ended once, by its request id, by any plane")
		}
	})
}

// TestBatchStoreBudgetHolder: a batch records the budget holder that
// holds its bound — one of the calling plane's own (its id, or its id
// and a suffix after '#'), as its budget leases are — and reads it back
// to every plane; another plane's holder is a 422, nothing stored.
func TestBatchStoreBudgetHolder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newEnrollEnv(t, db)
		p1, p2 := enrollStorePlane(t, e, "default", "dp-1"), enrollStorePlane(t, e, "default", "dp-2")
		a := newStoreTenant(t, e, p1, "default", "default", []byte("{}\n"), "x")
		now := time.Now().UTC().Truncate(time.Second)
		mk := func(holder string) (wire.BatchStoreBatch, error) {
			b := wire.BatchStoreBatch{ID: "batch_" + strings.ReplaceAll(uuid.NewString(), "-", ""), OrgID: a.org, WorkspaceID: a.ws, InferenceKeyID: a.key,
				Endpoint: "/v1/chat/completions", InputFileID: a.file.ID, CompletionWindow: "24h", Status: "in_progress", BudgetHolder: holder,
				CreatedAt: now, UpdatedAt: now}
			_, _, err := p1.call("create-batch", wire.BatchStoreRequest{Batch: &b, CustomIDs: []string{"h"}})
			return b, err
		}
		for _, foreign := range []string{"dp-2#abc", "dp-10#abc", "local#abc", "dp-1#" + strings.Repeat("x", 200)} {
			if b, err := mk(foreign); !isStatus(err, 422, "budget_holder") {
				t.Fatalf("holder %q: %v", foreign, err)
			} else if _, _, err := p1.call("batch", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: b.ID}); !isStatus(err, 404, "no such batch") {
				t.Fatalf("a refused batch was stored: %v", err)
			}
		}
		b, err := mk("dp-1#a1b2c3d4")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := p2.must("batch", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: b.ID})
		if got.Batch == nil || got.Batch.BudgetHolder != "dp-1#a1b2c3d4" {
			t.Fatalf("read back: %+v", got.Batch)
		}
		if b, err = mk(""); err != nil {
			t.Fatal(err)
		}
		if got, _ = p2.must("batch", wire.BatchStoreRequest{WorkspaceID: a.ws, ID: b.ID}); got.Batch == nil || got.Batch.BudgetHolder != "" {
			t.Fatalf("a batch no budget applies to: %+v", got.Batch)
		}
	})
}
