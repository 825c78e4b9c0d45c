package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// crashPlane is a data plane process with both journals in dir, whose
// usage goes to sink.
type crashPlane struct {
	plane    *dataplane.Plane
	url      string
	stopSync func()
}

func (e *infEnv) crashPlane(t *testing.T, dir string, sink dataplane.UsageSink) *crashPlane {
	t.Helper()
	bj, err := dataplane.OpenBudgetJournal(filepath.Join(dir, "budgets.journal"), func() string { return "dp-crash#" + uuid.NewString()[:8] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	rj, err := dataplane.OpenRequestJournal(filepath.Join(dir, "requests.journal"), dataplane.RequestJournalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rj.Close() })
	o := e.opts
	o.BudgetJournal, o.RequestJournal, o.Usage = bj, rj, sink
	p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
	if err := (&publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}).RefreshAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return &crashPlane{plane: p, url: srv.URL, stopSync: syncLoop(t, p)}
}

// TestCrashSettlesTheReservationToTheCost: a data plane killed with a
// stream under way (its journals as the files hold them at that instant);
// the next process records the stream's event, reason crashed, and its
// budget counts exactly what the events cost: the stream at what it
// relayed, not at its bound.
func TestCrashSettlesTheReservationToTheCost(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(budgetReply)
		e.policy(t, budgetRule("0.002", "day", "shared"))
		e.sync(t)
		dir := t.TempDir()
		dead := &captureSink{}
		p := e.crashPlane(t, dir, dead)
		for range 2 {
			if status, body := postTo(t, p.url, e.token, budgetRequest); status != http.StatusOK {
				t.Fatalf("%d %s", status, body)
			}
		}
		hold := make(chan struct{})
		defer close(hold)
		e.openai.Enqueue(providerstest.Reply{Text: "a long answer, relayed in pieces", ChunkSize: 8, Usage: budgetReply.Usage, Hold: hold})
		req, _ := http.NewRequest(http.MethodPost, p.url+"/inf/v1/chat/completions",
			strings.NewReader(strings.Replace(budgetRequest, `"max_tokens":10,`, `"max_tokens":10,"stream":true,`, 1)))
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("X-Request-Id", "cut-short")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		readUntil(t, resp.Body, "a long a")

		// kill -9: no more syncs; the next process starts from the files.
		p.stopSync()
		next := t.TempDir()
		for _, name := range []string{"requests.journal", "budgets.journal"} {
			raw, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(next, name), raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		q := e.crashPlane(t, next, e.usage)
		var cut *wire.UsageEventIn
		var total int64
		events := append(dead.snapshot(), e.usage.snapshot()...)
		for i, ev := range events {
			n, _ := catalog.ParseNanoUSD(ev.CostUSD)
			total += n
			if ev.RequestID != nil && *ev.RequestID == "cut-short" {
				cut = &events[i]
			}
		}
		if len(events) != 3 || cut == nil || cut.Status != "error" || *cut.Reason != "crashed" || cut.UsageSource != "estimated" ||
			cut.OutputTokens < 1 || cut.InputTokens < 250 || *cut.InferenceKeyID != e.keyID {
			t.Fatalf("events %+v", events)
		}
		q.stopSync()
		if err := q.plane.ReleaseBudgets(context.Background()); err != nil {
			t.Fatal(err)
		}
		states, err := (&budgets.Leases{Store: e.st}).States(context.Background(), e.ws, time.Now())
		if err != nil || len(states) != 1 {
			t.Fatalf("states %+v %v", states, err)
		}
		if states[0].SpentUSD != catalog.FormatNanoUSD(total) {
			t.Fatalf("the budget counts %s spent, the events %s", states[0].SpentUSD, catalog.FormatNanoUSD(total))
		}
	})
}

// TestCrashBeforeTheSinkFlushes: in one process with the control plane
// (role all) events wait in memory for the database; a request that ended
// is journaled until its event is stored, so a crash before the flush
// still leaves it to the next start, with its outcome and its own id.
func TestCrashBeforeTheSinkFlushes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(budgetReply)
		e.sync(t)
		path := filepath.Join(t.TempDir(), "requests.journal")
		rj, err := dataplane.OpenRequestJournal(path, dataplane.RequestJournalOptions{AwaitStored: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rj.Close() })
		sink := usage.NewStoreSink(e.st, usage.StoreSinkOptions{FlushInterval: time.Hour, Stored: rj.Stored})
		t.Cleanup(func() { _ = sink.Close(context.Background()) })
		o := e.opts
		o.RequestJournal, o.Usage = rj, sink
		p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
		if err := (&publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}).RefreshAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p)
		t.Cleanup(srv.Close)
		if status, body := postTo(t, srv.URL, e.token, budgetRequest); status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		// Killed now: the event is in the sink's memory only.
		recovered := func() []wire.UsageEventIn {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			copyPath := filepath.Join(t.TempDir(), "requests.journal")
			if err := os.WriteFile(copyPath, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			j, err := dataplane.OpenRequestJournal(copyPath, dataplane.RequestJournalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			got := &captureSink{}
			dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), dataplane.Options{Usage: got, RequestJournal: j})
			return got.snapshot()
		}
		events := recovered()
		if len(events) != 1 || events[0].Status != "ok" || events[0].UsageSource != "upstream" || events[0].InputTokens != 290 ||
			events[0].OutputTokens != 10 || events[0].CostUSD != catalog.FormatNanoUSD(290*150+10*600) {
			t.Fatalf("recovered %+v", events)
		}
		// Once stored, the journal lets it go, on disk too.
		if err := sink.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if events := recovered(); len(events) != 0 {
			t.Fatalf("recovered after the flush %+v", events)
		}
		// An orderly stop empties the journal.
		if err := rj.Close(); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() != 64 {
			t.Fatalf("the journal after an orderly stop: %v %v", st.Size(), err)
		}
	})
}
