package dataplane_test

import (
	"context"
	"crypto/ed25519"
	"io"
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
)

// journaledPlane is a data plane process of the test: the env's options,
// a budget journal at path, its sync loop, and the env's bundles.
type journaledPlane struct {
	plane    *dataplane.Plane
	srv      *httptest.Server
	journal  *dataplane.BudgetJournal
	stopSync func()
}

func (e *infEnv) journaledPlane(t *testing.T, path string) *journaledPlane {
	t.Helper()
	j, err := dataplane.OpenBudgetJournal(path, func() string { return "dp-test#" + uuid.NewString()[:8] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := e.opts
	o.BudgetJournal = j
	// A request the budget cannot take waits at most this long for room
	// another holder may give back: a holder that died without a journal
	// counts as gone only after 10 s of silence.
	o.BudgetWait = 2 * time.Second
	p := dataplane.NewPlane(e.signer.Public().(ed25519.PublicKey), o)
	if err := (&publish.Refresher{Compiler: e.refresh.Compiler, Plane: p, Store: e.st}).RefreshAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	jp := &journaledPlane{plane: p, srv: httptest.NewServer(p), journal: j}
	t.Cleanup(jp.srv.Close)
	jp.stopSync = syncLoop(t, p)
	return jp
}

// budgetRestarts runs restarts processes of one data plane in turn, each
// serving two requests and (inFlight) holding a third in flight when it
// dies: its sync stops, and the next process starts from its journal as
// it was on disk at that instant (keep: the journal's copy; !keep: no
// journal, as a data plane whose state dir is lost). Then the last process
// spends what is left, one request at a time, until its first refusal,
// which must be final. It returns the cost of the ok requests.
func budgetRestarts(t *testing.T, e *infEnv, restarts int, keep, inFlight bool) int64 {
	t.Helper()
	stream := strings.Replace(budgetRequest, `"max_tokens":10,`, `"max_tokens":10,"stream":true,`, 1)
	path := filepath.Join(t.TempDir(), "0", "budgets.journal")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	p := e.journaledPlane(t, path)
	before := okCost(t, e)
	for i := range restarts {
		for range 2 {
			if status, body := postTo(t, p.srv.URL, e.token, budgetRequest); status != http.StatusOK {
				t.Fatalf("process %d: %d %s", i, status, body)
			}
		}
		hold, done := make(chan struct{}), make(chan struct{})
		if inFlight {
			e.openai.Enqueue(providerstest.Reply{Text: "a long answer", Usage: budgetReply.Usage, Hold: hold})
			upstream := len(e.openai.Requests())
			go func() {
				defer close(done)
				status, body := postTo(t, p.srv.URL, e.token, stream)
				if status != http.StatusOK {
					t.Errorf("held request: %d %s", status, body)
				}
			}()
			for len(e.openai.Requests()) == upstream {
				time.Sleep(time.Millisecond)
			}
		} else {
			close(done)
		}
		// kill -9: no more syncs, and the journal is what the file holds now.
		p.stopSync()
		next := filepath.Join(t.TempDir(), "1", "budgets.journal")
		if err := os.MkdirAll(filepath.Dir(next), 0o700); err != nil {
			t.Fatal(err)
		}
		if keep {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(next, raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// The upstream answered and billed the held request all the same.
		close(hold)
		<-done
		p.srv.Close()
		path = next
		p = e.journaledPlane(t, path)
	}
	for n := 0; ; n++ {
		req, _ := http.NewRequest(http.MethodPost, p.srv.URL+"/inf/v1/chat/completions", strings.NewReader(budgetRequest))
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			continue
		}
		if (resp.StatusCode != http.StatusPaymentRequired && resp.StatusCode != http.StatusTooManyRequests) || n > 1000 {
			t.Fatalf("after %d requests: %d %s", n, resp.StatusCode, body)
		}
		if keep && resp.Header.Get("X-Should-Retry") != "false" {
			t.Fatalf("the refusal after the restarts is not final: %v %s", resp.Header, body)
		}
		break
	}
	e.usage.wait(t, len(e.usage.snapshot()))
	return okCost(t, e) - before
}

// TestBudgetRestartTakesBackItsLeases: five processes of one data plane,
// each killed, between requests or with one in flight, on a shared day
// budget of $0.002 (46 requests' real cost, 11 bounds). With the journal,
// each process takes its predecessor's lease back: killed between
// requests, less than one bound is never spent, at the end; a request in
// flight when its process died counts at its bound (it may have been
// answered and billed), so that excess is never spent either. Without the
// journal (a lost state dir, as every restart was before the journal),
// each dead process's lease is stranded until the period ends. Spend never
// passes the amount in any.
func TestBudgetRestartTakesBackItsLeases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		const restarts = 5
		amount, _ := catalog.ParseNanoUSD("0.002")
		cost := budgetReply.Usage.Input*150 + budgetReply.Usage.Output*600
		type run struct{ keep, inFlight bool }
		stranded := map[run]int64{}
		e := newInfEnv(t, db)
		e.openai.SetDefault(budgetReply)
		var previous uuid.UUID
		for _, r := range []run{{true, false}, {false, false}, {true, true}, {false, true}} {
			// A budget of its own for each run: the previous one's policy off.
			if previous != uuid.Nil {
				e.org.SetPolicyEnabled(e.ws, previous, false)
			}
			previous = e.org.Policy(e.ws, "cap-"+uuid.NewString()[:8], true, `{"target":{"kind":"workspace"},"rules":[`+budgetRule("0.002", "day", "shared")+`]}`)
			e.sync(t)
			spent := budgetRestarts(t, e, restarts, r.keep, r.inFlight)
			if spent > amount {
				t.Fatalf("%+v: overshoot: %d of %d", r, spent, amount)
			}
			stranded[r] = amount - spent
		}
		if s := stranded[run{true, false}]; s >= budgetBound() {
			t.Errorf("killed between requests, with the journal: %d never spent, a bound is %d", s, budgetBound())
		}
		if most := restarts*(budgetBound()-cost) + budgetBound(); stranded[run{true, true}] >= most {
			t.Errorf("killed mid-request, with the journal: %d never spent (at most %d expected)", stranded[run{true, true}], most)
		}
		for _, inFlight := range []bool{false, true} {
			with, without := stranded[run{true, inFlight}], stranded[run{false, inFlight}]
			if without <= with {
				t.Errorf("in flight %v: without the journal %d never spent, with it %d", inFlight, without, with)
			}
			t.Logf("%d restarts, killed %s: never spent %.1f%% of the amount with the journal, %.1f%% without",
				restarts, map[bool]string{false: "between requests", true: "with a request in flight"}[inFlight],
				100*float64(with)/float64(amount), 100*float64(without)/float64(amount))
		}
	})
}

// TestOrderlyShutdownGivesEverythingBack: a process that stops in order
// gives back all it holds, so the amount is whole for the next one,
// whether it has the journal or not.
func TestOrderlyShutdownGivesEverythingBack(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.openai.SetDefault(budgetReply)
		e.policy(t, budgetRule("0.002", "day", "shared"))
		e.sync(t)
		p := e.journaledPlane(t, filepath.Join(t.TempDir(), "budgets.journal"))
		for range 3 {
			if status, body := postTo(t, p.srv.URL, e.token, budgetRequest); status != http.StatusOK {
				t.Fatalf("%d %s", status, body)
			}
		}
		p.stopSync()
		if err := p.plane.ReleaseBudgets(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.journal.Close()
		states, err := (&budgets.Leases{Store: e.st}).States(context.Background(), e.ws, time.Now())
		if err != nil || len(states) != 1 {
			t.Fatalf("states %+v %v", states, err)
		}
		cost := budgetReply.Usage.Input*150 + budgetReply.Usage.Output*600
		if states[0].SpentUSD != catalog.FormatNanoUSD(3*cost) || states[0].ReservedUSD != "0" {
			t.Fatalf("after an orderly shutdown: %+v", states[0])
		}
	})
}
