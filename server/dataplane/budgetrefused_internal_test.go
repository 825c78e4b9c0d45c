package dataplane

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/gw-gateway/gw/server/spend"
)

// TestBudgetRefusedCodes (issue 26 row 2): only a budget whose room is
// gone for the period says budget_exceeded (final: 402, x-should-retry
// false, Anthropic's billing_error; issue 35); room held in flight is 429 budget_busy; a
// counter the control plane does not know and a control plane out of
// reach are 503 budget_unavailable. Each names the policy.
func TestBudgetRefusedCodes(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	claim := spend.Claim{Counter: spend.Counter{PolicyID: uuid.New(), Period: spend.Day, Aggregation: "shared"}, LimitNano: 2e9, PolicyName: "team cap"}
	cases := []struct {
		reason      spend.RefusalReason
		status      int
		code        string
		final       bool
		retryAfter  string
		messageHead string
	}{
		{spend.Spent, http.StatusPaymentRequired, "budget_exceeded", true, "50400", "Budget exceeded: "},
		{spend.Busy, http.StatusTooManyRequests, "budget_busy", false, "2", "Budget busy: "},
		{spend.Unknown, http.StatusServiceUnavailable, "budget_unavailable", false, "2", "Budget unavailable: the control plane does not know"},
		{spend.Unreachable, http.StatusServiceUnavailable, "budget_unavailable", false, "2", "Budget unavailable: this gateway cannot reach"},
	}
	for _, c := range cases {
		r := budgetRefused(&spend.Refusal{Claim: claim, ResetAt: now.Add(14 * time.Hour), Reason: c.reason}, now)
		var body struct {
			Error struct {
				Message string `json:"message"`
				Code    string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		for _, f := range r.header {
			h[f.name] = f.value
		}
		if r.status != c.status || body.Error.Code != c.code || r.billing != c.final || (h.Get("X-Should-Retry") == "false") != c.final ||
			h.Get("Retry-After") != c.retryAfter || !strings.HasPrefix(body.Error.Message, c.messageHead) {
			t.Errorf("reason %d: %d %+v %v billing %v", c.reason, r.status, body.Error, h, r.billing)
		}
		if want := `policy "team cap"`; !strings.Contains(body.Error.Message, want) {
			t.Errorf("reason %d does not name the policy: %s", c.reason, body.Error.Message)
		}
	}
}
