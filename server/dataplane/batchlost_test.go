package dataplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/openai/openai-go/v3"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/fixture"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// The lines of a remote data plane gone for good end on the control plane
// (server.EndLostBatchLines, its clock given): a plane whose heartbeat has
// been stale for longer than server.LostPlaneAfter, and one whose
// enrollment for the organization was withdrawn, each had taken lines;
// each such line fails interrupted and leaves one usage event at its upper
// bound (as submission counted it) under the line's request id, the
// batch's other lines run, and the batch finishes. A live plane's line is
// untouched until the plane ends it itself. A lost plane that comes back
// cannot end its line again, and its own event is the same event to
// ingestion (kept once: the bound's). Run again, nothing more ends.
func TestLostDataPlanesLinesEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		gatewayBatches(t, e)
		// The key's cost-centre tags, which every event of its lines carries.
		if _, err := db.NewRaw(`UPDATE inference_keys SET tags = '{"team":"ml"}' WHERE id = ?`, e.keyID).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 10, Output: 5}})
		ctx, st := context.Background(), e.st
		id := submitLines(t, e, "l", 6)

		start := store.Now()
		enroll := func(plane string, orgs ...uuid.UUID) {
			t.Helper()
			if _, err := st.RequestEnrollment(ctx, &store.DataPlaneEnrollment{DataPlaneID: plane, PublicKey: "pk-" + plane, Fingerprint: "fp-" + plane,
				Status: store.EnrollmentPending, RequestedAt: start, UpdatedAt: start}); err != nil {
				t.Fatal(err)
			}
			if err := st.ApproveEnrollment(ctx, plane, orgs, false, start); err != nil {
				t.Fatal(err)
			}
		}
		beat := func(plane string, at time.Time) {
			t.Helper()
			if err := st.RecordHeartbeat(ctx, &store.DataPlane{ID: plane, Version: "test", BundleVersions: store.JSONMap{}, FirstSeenAt: start, LastSeenAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		take := func(plane string) store.BatchLine {
			t.Helper()
			l, ok, err := st.TakeBatchLine(ctx, id, uuid.Must(uuid.NewV7()).String(), plane, start)
			if err != nil || !ok {
				t.Fatalf("%s taking a line: %v %v", plane, ok, err)
			}
			return l
		}
		other := fixture.NewOrg(t, st, e.kr, "other").ID
		for _, p := range []string{"dp-gone", "dp-live", "dp-withdrawn", "dp-moved"} {
			enroll(p, e.org.ID)
		}
		gone := []store.BatchLine{take("dp-gone"), take("dp-gone")}
		live := take("dp-live")
		withdrawn := take("dp-withdrawn")
		moved := take("dp-moved")
		// dp-gone's last heartbeat was at the start; the others kept
		// beating. dp-withdrawn's enrollment is revoked; dp-moved's now
		// holds another organization only.
		now := start.Add(server.LostPlaneAfter + time.Minute)
		beat("dp-gone", start)
		for _, p := range []string{"dp-live", "dp-withdrawn", "dp-moved"} {
			beat(p, now.Add(-5*time.Second))
		}
		if _, err := st.RevokeEnrollment(ctx, "dp-withdrawn", now); err != nil {
			t.Fatal(err)
		}
		enroll("dp-moved", other)

		// Not yet stale: only the withdrawn enrollments' lines end.
		if n, err := server.EndLostBatchLines(ctx, st, start.Add(server.LostPlaneAfter-time.Minute)); err != nil || n != 2 {
			t.Fatalf("before dp-gone is stale: %d ended, %v; want dp-withdrawn's and dp-moved's 2", n, err)
		}
		if n, err := server.EndLostBatchLines(ctx, st, now); err != nil || n != 2 {
			t.Fatalf("dp-gone stale: %d ended, %v; want its 2", n, err)
		}
		if n, err := server.EndLostBatchLines(ctx, st, now); err != nil || n != 0 {
			t.Fatalf("again: %d ended, %v", n, err)
		}
		lines, err := st.BatchLines(ctx, id, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		byLine := map[int]store.BatchLine{}
		for _, l := range lines {
			byLine[l.Line] = l
		}
		for _, l := range append(gone, withdrawn, moved) {
			got := byLine[l.Line]
			if got.Status != store.LineFailed || got.Error == nil || !strings.HasPrefix(*got.Error, "interrupted:") || got.Bound == nil ||
				got.CostNanoUSD != got.Bound.NanoUSD || got.Bound.NanoUSD <= 0 {
				t.Errorf("line %d of a lost plane: %+v", l.Line, got)
			}
			var ev store.UsageEvent
			if err := db.NewSelect().Model(&ev).Where("id = ?", uuid.MustParse(*l.RequestID)).Scan(ctx); err != nil {
				t.Fatalf("line %d's event: %v", l.Line, err)
			}
			if ev.CostNanoUSD != got.Bound.NanoUSD || ev.Status != "error" || ev.Reason == nil || *ev.Reason != "data_plane_lost" ||
				ev.BatchID == nil || *ev.BatchID != id || ev.Model != gptMini || ev.InputTokens != got.Bound.InputTokens ||
				ev.OutputTokens != got.Bound.OutputTokens || ev.UsageSource != "estimated" || ev.RequestID == nil || *ev.RequestID != *l.RequestID ||
				ev.InferenceKeyID == nil || ev.WorkspaceID != e.ws || ev.Endpoint == nil || *ev.Endpoint != "chat.completions" || ev.Tags["team"] != "ml" {
				t.Errorf("line %d's event: %+v (bound %+v)", l.Line, ev, got.Bound)
			}
		}
		var events int
		if err := db.NewRaw("SELECT COUNT(*) FROM usage_events WHERE batch_id = ?", id).Scan(ctx, &events); err != nil || events != 4 {
			t.Fatalf("%d events of the batch, want one per lost line (4): %v", events, err)
		}
		// The live plane's line runs on, as it took it.
		if got := byLine[live.Line]; got.Status != store.LineRunning || got.TakenBy == nil || *got.TakenBy != "dp-live" {
			t.Fatalf("the live plane's line: %+v", got)
		}

		// The rest runs here; the batch waits for the live plane's line.
		runner(t, e.plane)
		c := e.client()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			n, err := st.BatchCounts(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if n.Completed == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pending line never ran: %+v", n)
			}
		}
		if b, err := c.Batches.Get(ctx, id); err != nil || b.Status != openai.BatchStatusInProgress {
			t.Fatalf("the batch finished with the live plane's line running: %v %+v", err, b)
		}
		resp := `{"id":"x"}`
		if ok, err := st.EndTakenBatchLine(ctx, store.BatchLine{BatchID: id, Line: live.Line, Status: store.LineCompleted, StatusCode: 200,
			RequestID: live.RequestID, Response: &resp, CostNanoUSD: 7}, "dp-live", now); err != nil || !ok {
			t.Fatalf("the live plane ending its line: %v %v", ok, err)
		}
		done := waitBatch(t, &c, id, openai.BatchStatusCompleted)
		if done.RequestCounts.Completed != 2 || done.RequestCounts.Failed != 4 {
			t.Fatalf("the finished batch's counts: %+v", done.RequestCounts)
		}

		// dp-gone comes back: its end of a line is refused, nothing
		// changes, and its own event under the line's request id is the
		// one already kept.
		back := gone[0]
		if ok, err := st.EndTakenBatchLine(ctx, store.BatchLine{BatchID: id, Line: back.Line, Status: store.LineCompleted, StatusCode: 200,
			RequestID: back.RequestID, Response: &resp, CostNanoUSD: 1}, "dp-gone", now); err != nil || ok {
			t.Fatalf("the lost plane ending its line after all: %v %v", ok, err)
		}
		real := store.UsageEvent{ID: uuid.MustParse(*back.RequestID), OrgID: e.org.ID, WorkspaceID: e.ws, Model: gptMini, Provider: "openai",
			CostNanoUSD: 1, Status: "ok", OccurredAt: now, Bucket: store.UsageBucket(now), ReceivedAt: now, UsageSource: "upstream"}
		if n, err := st.InsertUsageEvents(ctx, []store.UsageEvent{real}); err != nil || n != 0 {
			t.Fatalf("the plane's own event: %d stored, %v; want 0 (the same id)", n, err)
		}
		var kept int64
		if err := db.NewRaw("SELECT cost_nano_usd FROM usage_events WHERE id = ?", real.ID).Scan(ctx, &kept); err != nil || kept != byLine[back.Line].Bound.NanoUSD {
			t.Fatalf("kept %d (%v), want the bound %d", kept, err, byLine[back.Line].Bound.NanoUSD)
		}
		t.Logf("a lost line billed at its bound: %s USD", catalog.FormatNanoUSD(kept))
	})
}
