package dataplane_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/budgets"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/dataplane"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/spend"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/tokens"
	"github.com/gw-gateway/gw/server/usage"
	"github.com/gw-gateway/gw/wire"
)

// budgetRule is a budget rule matching every request.
func budgetRule(amount, period, aggregation string) string {
	return `{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"` + amount + `","period":"` + period +
		`","aggregation":"` + aggregation + `"}}`
}

// budgetRequest asks for 10 tokens with a prompt of 1,000 bytes, which
// gpt-4o-mini's tokenizer makes 286 tokens of: budgetReply bills 290.
var budgetRequest = `{"model":"` + gptMini + `","max_tokens":10,"messages":[{"role":"user","content":"` +
	strings.Repeat("Tell me more. ", 72)[:1000] + `"}]}`

// budgetReply bills budgetRequest as a provider would: its $0.0000495
// (gpt-4o-mini: 150 and 600 nano-dollars an input and an output token).
var budgetReply = providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 290, Output: 10}}

// budgetBound is budgetRequest's cost bound (docs/budgets.md): its input
// counted by gpt-4o-mini's tokenizer (309 tokens: the prompt, the members'
// names and values, the objects' framing) at the input price, max_tokens
// at the output price, a nano-dollar of rounding: $0.000052351.
func budgetBound() int64 {
	return tokens.CountRequest(tokens.ForModel("gpt-4o-mini"), []byte(budgetRequest)).Bound*150 + 10*600 + 1
}

// okCost sums the cost of the ok events.
func okCost(t *testing.T, e *infEnv) int64 {
	var total int64
	for _, ev := range e.usage.snapshot() {
		if ev.Status != "ok" {
			continue
		}
		n, err := catalog.ParseNanoUSD(ev.CostUSD)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

func TestBudgetOfZeroRefusesEverything(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, budgetRule("0", "day", "shared"))
		e.sync(t)
		resp := e.post(t, budgetRequest)
		var got openAIError
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
		resp.Body.Close()
		if got.Error.Code == nil || *got.Error.Code != "budget_exceeded" || !strings.Contains(got.Error.Message, "resets at") {
			t.Fatalf("refusal %+v", got.Error)
		}
		// Final: the SDKs must not retry it before the day resets.
		_, end := spend.Bounds(spend.Day, time.Now())
		after, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.Header.Get("X-Should-Retry") != "false" || err != nil || after < 1 || after > int(time.Until(end).Seconds())+2 {
			t.Fatalf("headers %v", resp.Header)
		}
		if evs := e.usage.wait(t, 1); evs[0].Status != "denied" {
			t.Fatalf("event %+v", evs[0])
		}
		if n := len(e.openai.Requests()); n != 0 {
			t.Fatalf("%d upstream calls for a refused request", n)
		}
	})
}

// TestBudgetHoldsUnderConcurrency: 50 callers at once on a shared budget
// never push the spend past the amount, and once they stop, the budget
// refuses only when the next request's bound truly does not fit.
func TestBudgetHoldsUnderConcurrency(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		const amount = "0.002"
		e.policy(t, budgetRule(amount, "day", "shared"))
		e.sync(t)
		e.openai.SetDefault(budgetReply)

		var wg sync.WaitGroup
		var mu sync.Mutex
		refused, other := 0, 0
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 4 {
					resp := e.post(t, budgetRequest)
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					mu.Lock()
					switch {
					case resp.StatusCode == http.StatusOK:
					case resp.StatusCode == http.StatusPaymentRequired && strings.Contains(string(b), "budget_exceeded"),
						resp.StatusCode == http.StatusTooManyRequests && strings.Contains(string(b), "budget_busy"):
						refused++
					default:
						other++
						t.Errorf("unexpected answer %d %s", resp.StatusCode, b)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		e.usage.wait(t, 200)
		limit, _ := catalog.ParseNanoUSD(amount)
		spent := okCost(t, e)
		if spent > limit {
			t.Fatalf("overshoot: spent %d nano-dollars of %d", spent, limit)
		}
		if refused == 0 {
			t.Fatal("no request was refused")
		}
		// A refusal is final only when the bound no longer fits.
		bound := budgetBound()
		if limit-spent >= bound+1 {
			// Room is left: a request now must be admitted.
			resp := e.post(t, budgetRequest)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("refused with %d of %d nano-dollars left (bound %d)", limit-spent, limit, bound)
			}
		}
	})
}

func TestBudgetPerKeyCountsEachKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		// Room for one request per key (its bound), not two, nor a tail
		// admission's estimate (almost its bound: the first cost 95% of it).
		e.policy(t, budgetRule("0.00008", "month", "per_key"))
		second, _ := e.org.Key(e.ws, e.owner, nil)
		e.sync(t)
		e.openai.SetDefault(budgetReply)
		if resp := e.post(t, budgetRequest); resp.StatusCode != http.StatusOK {
			t.Fatalf("first key's first request: %d", resp.StatusCode)
		}
		e.postError(t, budgetRequest, http.StatusPaymentRequired)
		e.token = second
		if resp := e.post(t, budgetRequest); resp.StatusCode != http.StatusOK {
			t.Fatalf("second key's first request: %d", resp.StatusCode)
		}
	})
}

// TestBudgetCountsThePeriodsSpendSoFar: a budget set mid-day counts the
// day's usage already recorded (seeded from usage events); a restarted
// plane (a new lease holder) cannot spend what its predecessor was granted
// again; a policy edited mid-period keeps the spend and takes its new
// amount at once.
func TestBudgetCountsThePeriodsSpendSoFar(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		ctx := context.Background()
		// $0.001 spent today with the key before the budget existed.
		now := store.Now()
		ev := wire.UsageEventIn{ID: uuid.New(), OrgID: e.org.ID, WorkspaceID: e.ws, InferenceKeyID: &e.keyID, OwnerID: &e.owner,
			Model: gptMini, Provider: "openai", InputTokens: 1, CostUSD: "0.001", Status: "ok", OccurredAt: now}
		row, err := usage.Row(ev, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.st.InsertUsageEvents(ctx, []store.UsageEvent{row}); err != nil {
			t.Fatal(err)
		}
		// Room for $0.00104: the seed leaves less than one request's bound
		// (about $0.000052).
		id := e.org.Policy(e.ws, "daily-cap", true, `{"target":{"kind":"workspace"},"rules":[`+budgetRule("0.00104", "day", "shared")+`]}`)
		e.sync(t)
		got := e.postError(t, budgetRequest, http.StatusPaymentRequired)
		if !strings.Contains(got.Error.Message, `"daily-cap"`) {
			t.Fatalf("refusal names no policy: %s", got.Error.Message)
		}
		// The amount raised mid-day: the spend stays, the room is new.
		p, err := e.st.GetPolicy(ctx, e.ws, id)
		if err != nil {
			t.Fatal(err)
		}
		p.Definition = `{"target":{"kind":"workspace"},"rules":[` + budgetRule("0.0020", "day", "shared") + `]}`
		if err := e.st.UpdatePolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		e.sync(t)
		if resp := e.post(t, budgetRequest); resp.StatusCode != http.StatusOK {
			t.Fatalf("after raising the amount: %d", resp.StatusCode)
		}
		// A restarted plane: a new holder, whose predecessor's grant stays
		// counted. $0.001 seed + the first plane's grant leave no room for
		// a second grant of a bound.
		other := e.anotherPlane(t)
		status, body := postTo(t, other.URL, e.token, budgetRequest)
		limit, _ := catalog.ParseNanoUSD("0.0020")
		states, err := (&budgets.Leases{Store: e.st}).States(ctx, e.ws, time.Now())
		if err != nil || len(states) != 1 {
			t.Fatalf("states %+v %v", states, err)
		}
		spent, _ := catalog.ParseNanoUSD(states[0].SpentUSD)
		reserved, _ := catalog.ParseNanoUSD(states[0].ReservedUSD)
		if spent+reserved > limit {
			t.Fatalf("state past the amount: %+v", states[0])
		}
		if status == http.StatusOK && spent < 1_000_000 {
			t.Fatalf("the seed is not counted: %+v", states[0])
		}
		_ = body
	})
}

// TestBudgetRollsOverAtMidnightUTC: a day's budget spent by 23:59:59.999
// UTC admits again at 00:00:00 UTC, and a month's at the first of the
// next month, not a nanosecond before.
func TestBudgetRollsOverAtMidnightUTC(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		clk := &fakeClock{}
		clk.set(time.Date(2026, 11, 30, 23, 59, 59, 999_000_000, time.UTC))
		e := newInfEnv(t, db, withClock(clk.now))
		// Room for one request's bound, not two (each costs $0.0000495).
		e.policy(t, budgetRule("0.00008", "day", "shared"))
		e.policy(t, budgetRule("0.0006", "month", "shared"))
		e.sync(t)
		e.openai.SetDefault(budgetReply)
		if resp := e.post(t, budgetRequest); resp.StatusCode != http.StatusOK {
			t.Fatalf("first request: %d", resp.StatusCode)
		}
		got := e.postError(t, budgetRequest, http.StatusPaymentRequired)
		if !strings.Contains(got.Error.Message, "2026-12-01T00:00:00Z") {
			t.Fatalf("refusal does not say when the day resets: %s", got.Error.Message)
		}
		// Midnight UTC, the first of December: a new day and a new month.
		clk.set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		if resp := e.post(t, budgetRequest); resp.StatusCode != http.StatusOK {
			t.Fatalf("after midnight: %d", resp.StatusCode)
		}
		if resp := e.post(t, budgetRequest); resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("the new day's budget is spent too: %d", resp.StatusCode)
		}
	})
}

// TestRefusedReportDropsOnlyItsCounter: when the control plane will not
// hear of one counter any more (its policy deleted and its rows gone), the
// plane's reports of the others still land, and the refused one is
// dropped, so later syncs succeed.
func TestRefusedReportDropsOnlyItsCounter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		e := newInfEnv(t, db)
		e.openai.SetDefault(budgetReply)
		gone := e.org.Policy(e.ws, "gone", true, `{"target":{"kind":"workspace"},"rules":[`+budgetRule("1", "day", "shared")+`]}`)
		kept := e.org.Policy(e.ws, "kept", true, `{"target":{"kind":"workspace"},"rules":[`+budgetRule("1", "day", "shared")+`]}`)
		e.sync(t)
		if resp := e.post(t, budgetRequest); resp.StatusCode != http.StatusOK {
			t.Fatalf("first request: %d", resp.StatusCode)
		}
		start, _ := spend.Bounds(spend.Day, time.Now())
		goneCounter := spend.Counter{PolicyID: gone, Period: spend.Day, Aggregation: "shared"}.String()
		keptCounter := spend.Counter{PolicyID: kept, Period: spend.Day, Aggregation: "shared"}.String()
		// The control plane forgets one policy and its counter; the plane's
		// bundle still has it, so the next request counts against both.
		if err := e.st.DeletePolicy(ctx, gone); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"budget_leases", "budget_counters"} {
			if _, err := e.st.DB().NewDelete().TableExpr(table).Where("counter = ?", goneCounter).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if resp := e.post(t, budgetRequest); resp.StatusCode != http.StatusOK {
			t.Fatalf("second request: %d", resp.StatusCode)
		}
		e.usage.wait(t, 2)
		cost := budgetReply.Usage.Input*150 + budgetReply.Usage.Output*600
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := e.plane.SyncBudgets(ctx)
			leases, lerr := e.st.ListBudgetLeases(ctx, keptCounter, start)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if err == nil && len(leases) == 1 && leases[0].UsedNanoUSD == 2*cost {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the kept counter's spend was not reported: %+v, sync: %v", leases, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := e.plane.SyncBudgets(ctx); err != nil {
			t.Fatalf("a later sync: %v", err)
		}
	})
}

// TestBudgetStoredByAnOlderVersionServes (issue 26 row 1, issue 27 row 3):
// budget amounts an older version stored finer than a nano-dollar or
// beyond int64 nano-dollars are enforced as the amount below them, by the
// data plane and the control plane alike. Before, every request they held
// was refused 503 budget_unavailable: the workspace stopped serving.
func TestBudgetStoredByAnOlderVersionServes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, budgetRule("1.234567890123", "day", "shared"), budgetRule("9223372037", "month", "per_key"))
		e.sync(t)
		e.openai.SetDefault(budgetReply)
		for range 3 {
			if resp := e.post(t, budgetRequest); resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		}
		// One ten-billionth of a dollar holds as nothing: spent, for good.
		e.policy(t, budgetRule("0.0000000001", "day", "shared"))
		e.sync(t)
		resp := e.post(t, budgetRequest)
		var got openAIError
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusPaymentRequired ||
			got.Error.Code == nil || *got.Error.Code != "budget_exceeded" || !strings.Contains(got.Error.Message, "(0 USD per day)") {
			t.Fatalf("%d %+v %v", resp.StatusCode, got.Error, err)
		}
		if evs := e.usage.wait(t, 4); evs[3].Status != "denied" {
			t.Fatalf("events %+v", evs)
		}
	})
}

// leaseSource answers every lease ask with err: a control plane that
// refuses the counter, or one that cannot be dialled.
type leaseSource struct{ err error }

func (s leaseSource) Lease(context.Context, string, []wire.BudgetLeaseAsk) ([]wire.BudgetLeaseGrant, error) {
	return nil, s.err
}

func withLeases(s dataplane.BudgetSource) infOptions {
	return func(o *dataplane.Options) { o.Budgets = s }
}

var errNotDialled = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}

// TestBudgetRefusalsThatAreNotSpent (issue 26 row 2): a refusal that is
// not a budget running out never says budget_exceeded. A counter the
// control plane does not know, and a control plane this gateway cannot
// reach with no share held, are 503 budget_unavailable naming the budget
// and saying which; the SDKs may retry them.
func TestBudgetRefusalsThatAreNotSpent(t *testing.T) {
	cases := []struct {
		name string
		err  error
		says string
	}{
		{"unknown counter", fmt.Errorf("budget counter: no such active key: %w", spend.ErrLeaseRefused), "the control plane does not know the budget of policy"},
		{"control plane unreachable", errNotDialled, "this gateway cannot reach the control plane, and its share of the budget of policy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newInfEnv(t, storetest.Open(t, storetest.SQLite), withLeases(leaseSource{c.err}))
			e.policy(t, budgetRule("2", "day", "per_key"))
			e.sync(t)
			resp := e.post(t, budgetRequest)
			var got openAIError
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("%d %+v %v", resp.StatusCode, got, err)
			}
			if got.Error.Code == nil || *got.Error.Code != "budget_unavailable" || !strings.Contains(got.Error.Message, c.says) ||
				resp.Header.Get("Retry-After") != "2" || resp.Header.Get("X-Should-Retry") != "" {
				t.Fatalf("refusal %+v %v", got.Error, resp.Header)
			}
			if evs := e.usage.wait(t, 1); evs[0].Status != "denied" || evs[0].Reason == nil || *evs[0].Reason != "budget_unavailable" {
				t.Fatalf("event %+v", evs[0])
			}
			if n := len(e.openai.Requests()); n != 0 {
				t.Fatalf("%d upstream calls", n)
			}
		})
	}
}

// TestRateLimitOfflineSaysSo (issue 27 row 8): a plane that cannot reach
// the control plane holds no share of a key's limit, and refuses within
// it; the refusal says that, not that a limit of 2^63-1 requests a minute
// was reached by the first request.
func TestRateLimitOfflineSaysSo(t *testing.T) {
	e := newInfEnv(t, storetest.Open(t, storetest.SQLite), withLeases(leaseSource{errNotDialled}))
	e.setLimits(t, store.RateLimits{}, store.RateLimits{RPM: int64p(math.MaxInt64)})
	resp := e.post(t, budgetRequest)
	var got openAIError
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("%d %+v %v", resp.StatusCode, got, err)
	}
	if got.Error.Code == nil || *got.Error.Code != "rate_limit_unavailable" ||
		!strings.Contains(got.Error.Message, "cannot reach the control plane to take its share of the key's limit of 9223372036854775807 requests per minute") ||
		strings.Contains(got.Error.Message, "reached") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("refusal %+v %v", got.Error, resp.Header)
	}
}

// TestOverReportingUpstreamIsChargedTheBound (issue 28, row 6): an
// upstream that reports more than a request's bound allows (1,200 input
// tokens for a 90-byte body) is recorded as it reported, flagged
// over_bound, and charged to the budget at the bound: the budget's spend
// never passes its amount.
func TestOverReportingUpstreamIsChargedTheBound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		e.policy(t, budgetRule("0.0001", "day", "shared"))
		e.sync(t)
		e.openai.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: 1200, Output: 10}})
		body := `{"model":"` + gptMini + `","max_tokens":10,"messages":[{"role":"user","content":"How are you today?"}]}`
		served := 0
		for range 50 {
			status, _ := postTo(t, e.srv.URL, e.token, body)
			if status != http.StatusOK {
				break
			}
			served++
		}
		if served == 0 || served == 50 {
			t.Fatalf("%d served", served)
		}
		for _, ev := range e.usage.wait(t, served+1)[:served] {
			if ev.InputTokens != 1200 || ev.CostUSD != "0.000186" || ev.Provenance == nil || !ev.Provenance.OverBound ||
				len(ev.Provenance.Budgets) != 1 {
				t.Fatalf("event %+v, provenance %+v", ev, ev.Provenance)
			}
		}
		_ = e.plane.SyncBudgets(context.Background())
		states, err := (&budgets.Leases{Store: e.st}).States(context.Background(), e.ws, time.Now())
		if err != nil || len(states) != 1 {
			t.Fatalf("states %+v %v", states, err)
		}
		spent, _ := catalog.ParseNanoUSD(states[0].SpentUSD)
		if spent > 100_000 || spent < int64(served)*6_000 {
			t.Fatalf("the budget spent %d of 100,000 for %d requests", spent, served)
		}
	})
}
