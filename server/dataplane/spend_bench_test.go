package dataplane_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gw-gateway/gw/server/bundle"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/wire"
)

// generousLeases grants whatever is asked, in memory: the benchmark
// measures the data plane's admission work, not the control plane.
type generousLeases struct {
	mu      sync.Mutex
	granted map[string]int64
}

func (g *generousLeases) Lease(_ context.Context, holder string, asks []wire.BudgetLeaseAsk) ([]wire.BudgetLeaseGrant, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]wire.BudgetLeaseGrant, len(asks))
	for i, a := range asks {
		g.granted[a.Counter] += a.WantNanoUSD
		out[i] = wire.BudgetLeaseGrant{Counter: a.Counter, PeriodStart: a.PeriodStart, GrantedNanoUSD: g.granted[a.Counter], UsedNanoUSD: a.UsedNanoUSD}
	}
	return out, nil
}

var _ = spend.Day

// BenchmarkSpendControlOverhead measures what hard budgets and rate limits
// add to a chat completion: the same request through two planes in one
// run, one whose policy has no budget and whose key has no limits
// ("plain"), the other with a shared and a per-key budget and request and
// token limits ("controlled"). The plane is called in process and the
// upstream answers at once, so the difference is gw's own admission work:
// the cost bound, the reservations, the rate-limit counts and headers, the
// settlement; and the third, "controlled-journaled", with the ledger's
// journal on disk; the fourth with the request journal (crash.go) too.
//
//	go test -run '^$' -bench SpendControlOverhead -benchmem ./server/dataplane
func BenchmarkSpendControlOverhead(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29}}`)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	b.Cleanup(upstream.Close)
	budgets := `,{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"1000000","period":"day","aggregation":"shared"}}` +
		`,{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"1000000","period":"month","aggregation":"per_key"}}`
	limits := &bundle.RateLimits{RequestsPerMinute: 1 << 40, TokensPerMinute: 1 << 50}

	plane := func(rules string, lim *bundle.RateLimits, journal, requests bool) (http.Handler, string, *countingSink) {
		token, signed, pub, kr := benchBundleWith(b, upstream.URL+"/v1", rules, lim)
		sink := &countingSink{}
		opts := dataplane.Options{Keyring: kr, Usage: sink, Budgets: &generousLeases{granted: map[string]int64{}}}
		if journal {
			j, err := dataplane.OpenBudgetJournal(filepath.Join(b.TempDir(), "budgets.journal"), func() string { return "bench" }, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { j.Close() })
			opts.BudgetJournal = j
		}
		if requests {
			j, err := dataplane.OpenRequestJournal(filepath.Join(b.TempDir(), "requests.journal"), dataplane.RequestJournalOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { j.Close() })
			opts.RequestJournal = j
		}
		p := dataplane.NewPlane(pub, opts)
		if err := p.Admit(signed); err != nil {
			b.Fatal(err)
		}
		p.MarkReady()
		return p, token, sink
	}
	body := []byte(`{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}]}`)
	run := func(b *testing.B, h http.Handler, token string) {
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, "/inf/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	}
	plainH, plainToken, _ := plane("", nil, false, false)
	controlledH, controlledToken, _ := plane(budgets, limits, false, false)
	journaledH, journaledToken, _ := plane(budgets, limits, true, false)
	requestsH, requestsToken, _ := plane(budgets, limits, true, true)
	var plainNs, plainAllocs float64
	b.Run("plain", func(b *testing.B) {
		run(b, plainH, plainToken)
		plainNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		plainAllocs = float64(testing.AllocsPerRun(50, func() {}))
	})
	b.Run("controlled", func(b *testing.B) {
		run(b, controlledH, controlledToken)
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns-plainNs, "added-ns/op")
		b.ReportMetric(ns/plainNs, "ratio")
		_ = plainAllocs
	})
	// The same, with the budget ledger journaled to a file, as gw serve
	// does: one write(2) per request, its reservation's.
	var journaledNs float64
	b.Run("controlled-journaled", func(b *testing.B) {
		run(b, journaledH, journaledToken)
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		journaledNs = ns
		b.ReportMetric(ns-plainNs, "added-ns/op")
		b.ReportMetric(ns/plainNs, "ratio")
	})
	// And with the requests journaled too, as gw serve does, for a crash
	// (two pwrite(2)s a request: its record, its outcome); ratio-to-budget
	// is against "controlled-journaled".
	b.Run("controlled-journaled-requests", func(b *testing.B) {
		run(b, requestsH, requestsToken)
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns-plainNs, "added-ns/op")
		b.ReportMetric(ns/plainNs, "ratio")
		b.ReportMetric(ns/journaledNs, "ratio-to-budget-journal")
	})
}
