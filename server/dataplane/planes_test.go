package dataplane_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/store"
	"github.com/gw-gateway/gw/server/store/storetest"
)

// postTo sends a chat completion to one plane and returns its status and
// body.
func postTo(t *testing.T, url, token, body string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, url+"/inf/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRateLimitHoldsAcrossPlanes: two data planes of one control plane
// admit a key's per-minute request limit once between them, not once
// each.
func TestRateLimitHoldsAcrossPlanes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		clk := &fakeClock{}
		clk.set(time.Date(2026, 11, 23, 10, 0, 5, 0, time.UTC))
		e := newInfEnv(t, db, withClock(clk.now))
		e.setLimits(t, store.RateLimits{}, store.RateLimits{RPM: int64p(10)})
		planes := []string{e.srv.URL, e.anotherPlane(t).URL}
		var mu sync.Mutex
		var wg sync.WaitGroup
		ok, limited := 0, 0
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, body := postTo(t, planes[i%2], e.token, budgetRequest)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case status == http.StatusOK:
					ok++
				case status == http.StatusTooManyRequests && strings.Contains(body, "rate_limit_exceeded"):
					limited++
				default:
					t.Errorf("answer %d %s", status, body)
				}
			}()
		}
		wg.Wait()
		// Never more than the limit between the planes. A refusal while
		// the other plane still held an unused slice is possible when
		// requests race for the last slices (a plane holds at most one
		// slice it does not use); more than one would be a bug.
		if ok > 10 || ok < 9 || ok+limited != 30 {
			t.Logf("log:\n%s", e.log.String())
			t.Fatalf("%d admitted and %d limited, want 10 (at least 9) and the rest limited", ok, limited)
		}
		if ok < 10 {
			t.Logf("one false refusal under contention: %d admitted", ok)
		}
		// The next minute starts afresh, on either plane.
		clk.set(time.Date(2026, 11, 23, 10, 1, 0, 0, time.UTC))
		if status, body := postTo(t, planes[1], e.token, budgetRequest); status != http.StatusOK {
			t.Fatalf("next minute: %d %s", status, body)
		}
	})
}

// TestBudgetHoldsAcrossPlanes: two data planes share one budget through
// leases; together they never spend past it, and once both have given back
// what they hold, a request that fits is admitted on either.
func TestBudgetHoldsAcrossPlanes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newInfEnv(t, db)
		const amount = "0.003"
		e.policy(t, budgetRule(amount, "day", "shared"))
		e.sync(t)
		planes := []string{e.srv.URL, e.anotherPlane(t).URL}
		e.openai.SetDefault(budgetReply)
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					status, body := postTo(t, planes[i%2], e.token, budgetRequest)
					if status != http.StatusOK && !(status == http.StatusPaymentRequired && strings.Contains(body, "budget_exceeded")) &&
						!(status == http.StatusTooManyRequests && strings.Contains(body, "budget_busy")) {
						t.Errorf("answer %d %s", status, body)
					}
				}
			}()
		}
		wg.Wait()
		limit, _ := catalog.ParseNanoUSD(amount)
		if spent := okCost(t, e); spent > limit {
			t.Fatalf("overshoot across planes: %d of %d", spent, limit)
		}
	})
}
