package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/publish"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// Two processes on one database (two gw serve replicas) run batches one
// at a time: the second plane's runner waits while the first holds the
// runner's lease, and takes over when the first stops. A batch of lines
// gw sends and a batch on the provider's batch API, run across the
// takeover: every line reaches the upstream once, one usage event each,
// the provider batch is created once, and the second plane's runner sent
// nothing while the first held the lease.
func TestOneReplicaRunsBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		const pace = 20 * time.Millisecond
		e := newInfEnv(t, db, withBatches(db), func(o *dataplane.Options) { o.BatchPace = pace })
		// Anthropic's lines on gw's runner, OpenAI's on its batch API.
		if _, err := db.NewRaw(`UPDATE provider_credentials SET settings = '{"batches":"gateway"}' WHERE provider = 'anthropic'`).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.sync(t)
		e.anthropic.SetDefault(providerstest.Reply{Text: "hi", Usage: providerstest.Usage{Input: 10, Output: 5}})
		const n = 60
		var reqs []string
		for i := range n {
			reqs = append(reqs, msgRequest(fmt.Sprint("m", i), haiku))
		}
		status, body := call(t, "POST", e.srv.URL+"/inf/v1/messages/batches", e.token, msgBatchBody(reqs...))
		if status != 200 {
			t.Fatalf("message batch: %d %s", status, body)
		}
		var mb struct{ ID string }
		if err := json.Unmarshal(body, &mb); err != nil {
			t.Fatal(err)
		}
		native := submitLines(t, e, "o", 4)

		// The second replica: a plane of its own on the same store, its
		// events in a sink of its own.
		o := e.opts
		second := &captureSink{}
		o.Usage = second
		p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
		if err := (&publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}).RefreshAll(context.Background()); err != nil {
			t.Fatal(err)
		}

		stopFirst := runner(t, e.plane)
		waitUntil(t, "the first replica sending lines", func() bool { return len(e.anthropic.Requests()) >= 5 })
		runner(t, p)
		time.Sleep(20 * pace)
		if got := len(second.snapshot()); got != 0 {
			t.Fatalf("the second replica sent %d lines while the first held the lease", got)
		}
		sentByFirst := len(e.anthropic.Requests())
		stopFirst()
		if sentByFirst >= n {
			t.Fatalf("the first replica sent every line (%d) before the second started: no takeover to see", sentByFirst)
		}
		c := e.sdk()
		waitBatch(t, c, native, openai.BatchStatusCompleted)
		ac := e.anthropicClient()
		done := waitMessageBatch(t, ac, mb.ID)
		if done.RequestCounts.Succeeded != n {
			t.Fatalf("the message batch: %s", done.RawJSON())
		}
		if len(second.snapshot()) == 0 {
			t.Fatal("the second replica never took over")
		}
		// Each line reached the upstream once.
		sent := map[string]int{}
		for _, r := range e.anthropic.Requests() {
			for i := range n {
				if strings.Contains(string(r.Raw), fmt.Sprintf(`"hello m%d"`, i)) {
					sent[fmt.Sprint(i)]++
				}
			}
		}
		for i := range n {
			if sent[fmt.Sprint(i)] != 1 {
				t.Errorf("line m%d reached the upstream %d times", i, sent[fmt.Sprint(i)])
			}
		}
		if got := e.openai.BatchesCreated(); got != 1 {
			t.Errorf("the provider batch was created %d times", got)
		}
		// One event a line, across both replicas' sinks.
		all := append(e.usage.snapshot(), second.snapshot()...)
		seen := map[string]bool{}
		for _, ev := range all {
			if ev.BatchID == nil || ev.RequestID == nil || seen[*ev.RequestID] {
				t.Fatalf("an event twice or without its batch: %+v", ev)
			}
			seen[*ev.RequestID] = true
		}
		if len(seen) != n+4 {
			t.Fatalf("%d events, want %d", len(seen), n+4)
		}
		t.Logf("the first replica sent %d lines, the second the other %d", sentByFirst, n-sentByFirst)
	})
}

// takeThenStop is the store with the runner stopped the moment a line is
// taken: the stop lands between the store's take and the send.
type takeThenStop struct {
	dataplane.BatchStore
	stop func()
}

func (s takeThenStop) StartLine(ctx context.Context, batchID, requestID string, now time.Time) (dataplane.BatchLine, bool, error) {
	l, ok, err := s.BatchStore.StartLine(ctx, batchID, requestID, now)
	s.stop()
	return l, ok, err
}

// A runner stopped while it takes a line neither loses the take (a take
// the store made stays running, never sent, until the next start fails it
// as interrupted) nor sends the line: it gives the line back, pending,
// for the next runner to send.
func TestRunnerStoppedAtATakeGivesTheLineBack(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db, withBatches(db))
		gatewayBatches(t, e)
		e.sync(t)
		id := submitLines(t, e, "s", 1)
		ctx, cancel := context.WithCancel(context.Background())
		o := e.opts
		o.Batches = takeThenStop{BatchStore: e.opts.Batches, stop: cancel}
		p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
		if err := (&publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}).RefreshAll(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.RunBatches(ctx)
		lines, err := e.st.BatchLines(context.Background(), id, 0, 10)
		if err != nil || len(lines) != 1 || lines[0].Status != "pending" || lines[0].RequestID != nil {
			t.Fatalf("the line taken as the runner stopped: %+v %v", lines, err)
		}
		if n := len(e.openai.Requests()); n != 0 {
			t.Fatalf("the line was sent %d times by a stopped runner", n)
		}
		// The next runner sends it, once.
		runner(t, e.plane)
		waitUntil(t, "the line sent by the next runner", func() bool {
			c, err := e.st.BatchCounts(context.Background(), id)
			return err == nil && c.Completed == 1
		})
		if n := len(e.openai.Requests()); n != 1 {
			t.Fatalf("the line reached the upstream %d times", n)
		}
	})
}
