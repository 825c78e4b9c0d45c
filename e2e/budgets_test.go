package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/server/tokens"
	"github.com/gw-gateway/gw/wire"
)

// The budget run's numbers. Every request has the same body, so the same
// cost bound; the fake upstream bills every one the same tokens: a few more
// than gpt-4o-mini's tokenizer makes of the prompt's 1,000 bytes (286).
const (
	budgetAmount   = "0.1"
	budgetCallers  = 50 // per data plane
	budgetPerCall  = 40 // requests at most per caller and phase
	budgetRunLimit = 20 * time.Second
	// gpt-4o-mini: $0.15 and $0.60 per million input and output tokens,
	// 150 and 600 nano-dollars a token.
	budgetIn, budgetOut = 290, 10
	budgetCost          = budgetIn*150 + budgetOut*600
)

var (
	budgetBody = `{"model":"openai/gpt-4o-mini","max_tokens":10,"messages":[{"role":"user","content":"` +
		strings.Repeat("Tell me more. ", 72)[:1000] + `"}]}`
	// The data plane's bound (docs/budgets.md): the body counted by
	// gpt-4o-mini's tokenizer at the input price, max_tokens at the output
	// price, one nano-dollar of rounding.
	budgetBound = tokens.CountRequest(tokens.ForModel("gpt-4o-mini"), []byte(budgetBody)).Bound*150 + budgetOut*600 + 1
)

// TestBudgetAcrossDataPlanes holds one shared budget across a control plane
// and two remote data planes (three gw serve processes), 50 concurrent
// callers on each data plane sending chat completions until refused, and
// measures what the leases cost in refusals. Two phases, each on a
// workspace of its own with the same budget:
//
//   - steady: the control plane stays up;
//   - outage: the control plane is killed (SIGKILL) once about 20% of the
//     budget is spent and restarted on the same database and address 3 s
//     later. While it is down, the data planes serve within the leases
//     they hold and refuse once those are spent ("outage refusals": the
//     refusal says the control plane is unreachable; a caller that gets
//     one waits for the restart and goes on); they are expected and
//     counted apart.
//
// Asserted in both: the cost of the ok usage events (read through the
// control plane's usage events API once the spools have drained) never
// passes the amount — the overshoot is 0 —, every refusal is a 402 with
// code budget_exceeded (a 429 budget_busy while requests in flight hold
// the rest) or, while the control plane is unreachable, a 503
// budget_unavailable saying so, and the control plane's budget state
// agrees with the events.
//
// Measured (t.Logf, and docs/budgets.md "Measured"):
//
//   - overshoot: max(0, Σ cost of ok events − amount);
//   - false refusals: a refusal (outage refusals excepted) is false when a
//     single exact ledger would have admitted it: with R the refused
//     request's [sent, answered] interval, the committed amount is the
//     cost of every ok request answered before R was sent plus the bound
//     of every ok request whose own interval overlaps R (it held a
//     reservation at some instant of R, or may have); the refusal is false
//     if amount − committed ≥ the request's bound. The committed amount so
//     computed is at least what any ledger held at any instant of R, so a
//     refusal counted false truly had room somewhere (on the other data
//     plane, or not yet granted);
//   - room at the end: after every caller stopped, every reservation
//     settled, and both data planes synced (spend reported and leases
//     beyond their keep returned, each 2 s), amount − Σ ok cost, in
//     request bounds. A refusal is also false by the end-state criterion
//     when that room is ≥ one bound: the request would have fit in the
//     budget as it was finally spent. All requests have the same bound,
//     so under that criterion either every refusal is false or none is.
func TestBudgetAcrossDataPlanes(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) { budgetAcrossDataPlanes(t, d) })
	}
}

func budgetAcrossDataPlanes(t *testing.T, d storetest.Dialect) {
	ctx := context.Background()
	p := startBudgetPlanes(t, d, "budget")
	owner := p.owner
	up := providerstest.NewOpenAI(t, "sk-upstream-budget")
	up.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: budgetIn, Output: budgetOut}})
	if _, err := owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.CreateWorkspace(ctx, "default", wire.WorkspaceCreate{Name: "Outage"}); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, ws := range []string{"default", "outage"} {
		tokens[ws] = budgetWorkspace(t, owner, ws, budgetAmount)
	}
	p.startDataPlanes(t, "dp-a", "dp-b")
	dps := p.dps
	amount, _ := catalog.ParseNanoUSD(budgetAmount)

	steady := runBudgetPhase(t, dps, tokens["default"], nil)
	steady.report(t, "steady", checkBudget(t, p.cp.URL, p.token, "default", steady, amount), amount)

	// The outage: kill the control plane once 20% of the budget is spent,
	// bring it back 3 s later on the same database, a new process.
	outage := &budgetOutage{restarted: make(chan struct{})}
	outage.at = func(okCount int64) bool { return okCount*budgetCost >= amount*2/10 }
	outage.kill = func() {
		p.killControlPlane()
		time.Sleep(3 * time.Second)
		p.restartControlPlane(t)
	}
	out := runBudgetPhase(t, dps, tokens["outage"], outage)
	if !outage.done.Load() {
		t.Fatal("the outage phase spent less than 20% of the budget: the control plane was never killed")
	}
	out.report(t, "outage", checkBudget(t, p.cp.URL, p.token, "outage", out, amount), amount)
	p.stop(t)
}

// budgetWorkspace gives workspace ws (its slug) a policy with one shared
// day budget of amount USD over all its requests, and returns the token of
// a new inference key of the workspace.
func budgetWorkspace(t *testing.T, owner *client.Client, ws, amount string) string {
	t.Helper()
	ctx := context.Background()
	def := `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},` +
		`"action":{"kind":"budget","amount_usd":"` + amount + `","period":"day","aggregation":"shared"}}]}`
	if _, err := owner.CreatePolicy(ctx, "default", ws, wire.PolicyCreate{Name: "spend-cap", Definition: wire.PolicyDefinition(def)}); err != nil {
		t.Fatalf("policy: %v", err)
	}
	ik, err := owner.CreateInferenceKey(ctx, "default", ws, wire.InferenceKeyCreate{Name: "callers"})
	if err != nil {
		t.Fatal(err)
	}
	return ik.Token
}

// budgetOutage kills the control plane mid-phase: once at(ok answers so
// far) holds, kill runs (kill, wait, restart), then restarted is closed.
type budgetOutage struct {
	at               func(okCount int64) bool
	kill             func()
	restarted        chan struct{}
	done             atomic.Bool // restarted
	killedAt, backAt time.Time
}

// budgetCall is one request of the run, as its caller saw it.
type budgetCall struct {
	dp           int
	sent, answer time.Time
	status       int
	// unreachable: the refusal says the control plane is unreachable;
	// outage: so, and the control plane was not back when it was sent.
	unreachable, outage bool
}

type budgetRun struct {
	calls   []budgetCall
	outage  *budgetOutage
	elapsed time.Duration
}

// runBudgetPhase runs 50 callers per data plane until each is refused,
// sends budgetPerCall requests or the time limit passes.
func runBudgetPhase(t *testing.T, dps []*server, token string, outage *budgetOutage) *budgetRun {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: budgetCallers}}
	defer hc.CloseIdleConnections()
	start := time.Now()
	deadline := start.Add(budgetRunLimit)
	var (
		mu      sync.Mutex
		calls   []budgetCall
		okCount atomic.Int64
		wg      sync.WaitGroup
	)
	send := func(dp int) (budgetCall, string) {
		c := budgetCall{dp: dp, sent: time.Now()}
		req, _ := http.NewRequest("POST", dps[dp].URL+"/inf/v1/chat/completions", strings.NewReader(budgetBody))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return c, err.Error()
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.answer, c.status = time.Now(), resp.StatusCode
		return c, string(body)
	}
	if outage != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !outage.at(okCount.Load()) {
				if time.Now().After(deadline) {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			outage.killedAt = time.Now()
			outage.kill()
			outage.backAt = time.Now()
			outage.done.Store(true)
			close(outage.restarted)
		}()
	}
	for dp := range dps {
		for range budgetCallers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range budgetPerCall {
					if time.Now().After(deadline) {
						return
					}
					back := outage == nil || outage.done.Load()
					c, body := send(dp)
					if c.status == http.StatusOK {
						okCount.Add(1)
					}
					refused := strings.Contains(body, `"type":"insufficient_quota"`) &&
						(c.status == http.StatusPaymentRequired && strings.Contains(body, `"code":"budget_exceeded"`) ||
							c.status == http.StatusTooManyRequests && strings.Contains(body, `"code":"budget_busy"`))
					// Not a budget running out: 503 budget_unavailable.
					c.unreachable = c.status == http.StatusServiceUnavailable && strings.Contains(body, `"code":"budget_unavailable"`) &&
						strings.Contains(body, "cannot reach the control plane")
					c.outage = c.unreachable && !back
					mu.Lock()
					calls = append(calls, c)
					mu.Unlock()
					switch {
					case c.status == http.StatusOK:
					case c.outage:
						select {
						case <-outage.restarted:
						case <-time.After(time.Until(deadline)):
						}
					case refused || c.unreachable:
						return
					default:
						t.Errorf("data plane %d answered %d: %s", dp, c.status, body)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	return &budgetRun{calls: calls, outage: outage, elapsed: time.Since(start)}
}

// budgetFigures are what the control plane recorded of a phase.
type budgetFigures struct {
	okEvents, deniedEvents int
	okCost                 int64
	// errorEvents are requests cut short (a data plane killed mid-request:
	// reason crashed), billed errCost.
	errorEvents     int
	errCost         int64
	held, ungranted int64 // leases kept by the data planes; never granted
	// byDay is the cost of the ok and error events of each UTC day.
	byDay dayCosts
}

// dayCosts is the cost of a phase's events by the UTC day (its start) they
// occurred in: a day budget's amount holds per day.
type dayCosts map[time.Time]int64

// add counts an event's cost in its day.
func (d dayCosts) add(occurred time.Time, cost int64) {
	d[occurred.UTC().Truncate(24*time.Hour)] += cost
}

// overshoot is the most the events of one UTC day cost beyond amount
// (≤ 0: none), and that day. A day budget is a counter per UTC day, each
// with the whole amount (docs/budgets.md, "Counters and periods"): a phase
// that runs across midnight spends up to the amount on each side of it, so
// the events' total of the phase is no bound, each day's is. (The last CI
// failure of TestBudgetDataPlaneRestarts, 28.8 M of 20 M nano-dollars, came
// from the CI run around 00:00 UTC, which summed both days against one
// day's amount.) An event is dated when its request began and charged to
// the day its budget was reserved in, once its body is read and routed, so
// one begun in a day's last moments may be charged to the next.
func (d dayCosts) overshoot(amount int64) (int64, time.Time) {
	over, worst := int64(math.MinInt64), time.Time{}
	for day, cost := range d {
		if cost-amount > over {
			over, worst = cost-amount, day
		}
	}
	return over, worst
}

// last is the cost of the events of the latest UTC day, and whether
// the phase's events span more than one.
func (d dayCosts) last() (cost int64, straddled bool) {
	var last time.Time
	for day := range d {
		if day.After(last) {
			last = day
		}
	}
	return d[last], len(d) > 1
}

// checkBudget waits for the spools to drain and the data planes' spend
// reports, then asserts the phase held its budget.
func checkBudget(t *testing.T, cpURL, token, ws string, run *budgetRun, amount int64) budgetFigures {
	t.Helper()
	owner, _ := client.New(client.Options{Server: cpURL, Token: token})
	var answered int
	for _, c := range run.calls {
		if c.status != 0 {
			answered++
		}
	}
	var f budgetFigures
	waitFor(t, "every usage event at the control plane", func() bool {
		var err error
		f, err = usageFigures(cpURL, token, ws)
		return err == nil && f.okEvents+f.deniedEvents == answered
	})
	if over, day := f.byDay.overshoot(amount); over > 0 {
		t.Errorf("%s: overshoot of %d nano-dollars on %s: its ok events cost %d of %d", ws, over, day.Format(time.DateOnly), f.byDay[day], amount)
	}
	today, straddled := f.byDay.last()
	if straddled {
		t.Logf("%s: the phase ran across midnight UTC: each day's events within its amount, %v; the figures below mix two budgets", ws, f.byDay)
	}
	if f.errorEvents > 0 {
		t.Errorf("%s: %d events are errors", ws, f.errorEvents)
	}
	// The data planes report their spend and return their leases beyond a
	// keep every 2 s; once the control plane counts exactly the events'
	// cost, that report has been made.
	var states []wire.BudgetState
	waitFor(t, "the data planes' spend reports", func() bool {
		var err error
		states, err = owner.ListBudgets(context.Background(), "default", ws)
		if err != nil || len(states) != 1 {
			return false
		}
		spent, _ := catalog.ParseNanoUSD(states[0].SpentUSD)
		return spent == today
	})
	f.held, _ = catalog.ParseNanoUSD(states[0].ReservedUSD)
	f.ungranted, _ = catalog.ParseNanoUSD(states[0].RemainingUSD)
	return f
}

// usageFigures reads every usage event of the workspace through the
// control plane's API.
func usageFigures(cpURL, token, ws string) (budgetFigures, error) {
	f := budgetFigures{byDay: dayCosts{}}
	cursor := ""
	for range 100 {
		q := url.Values{"limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page wire.Page[wire.UsageEvent]
		if err := getJSON(cpURL, token, "/api/v1/organizations/default/workspaces/"+ws+"/usage-events?"+q.Encode(), &page); err != nil {
			return f, err
		}
		for _, ev := range page.Data {
			switch ev.Status {
			case "ok":
				n, err := catalog.ParseNanoUSD(ev.CostUSD)
				if err != nil {
					return f, err
				}
				f.okEvents++
				f.okCost += n
				f.byDay.add(ev.OccurredAt, n)
			case "denied":
				f.deniedEvents++
			case "error":
				n, err := catalog.ParseNanoUSD(ev.CostUSD)
				if err != nil {
					return f, err
				}
				f.errorEvents++
				f.errCost += n
				f.byDay.add(ev.OccurredAt, n)
			default:
				return f, fmt.Errorf("event %s is %s", ev.ID, ev.Status)
			}
		}
		if page.Page.NextCursor == nil {
			return f, nil
		}
		cursor = *page.Page.NextCursor
	}
	return f, fmt.Errorf("more than 100 pages of events")
}

// report counts refusals and false refusals (see the test's comment) and
// logs the phase's figures.
func (r *budgetRun) report(t *testing.T, phase string, f budgetFigures, amount int64) {
	t.Helper()
	var ok, refused, outageRefused, falseNow []int
	unreachableUp := 0
	var oks []budgetCall
	for _, c := range r.calls {
		if c.status == http.StatusOK {
			oks = append(oks, c)
		}
	}
	down, after := 0, 0
	for i, c := range r.calls {
		switch {
		case c.status == http.StatusOK:
			ok = append(ok, i)
			if r.outage != nil && c.sent.After(r.outage.killedAt) && c.answer.Before(r.outage.backAt) {
				down++
			}
			if r.outage != nil && c.sent.After(r.outage.backAt) {
				after++
			}
		case c.outage:
			outageRefused = append(outageRefused, i)
		case c.status == http.StatusPaymentRequired || c.status == http.StatusTooManyRequests || c.unreachable:
			refused = append(refused, i)
			if c.unreachable {
				unreachableUp++
			}
			var committed int64
			for _, o := range oks {
				switch {
				case o.answer.Before(c.sent):
					committed += budgetCost
				case o.sent.Before(c.answer):
					committed += budgetBound
				}
			}
			if amount-committed >= budgetBound {
				falseNow = append(falseNow, i)
			}

		}
	}
	if len(ok) != f.okEvents || len(refused)+len(outageRefused) != f.deniedEvents {
		t.Errorf("%s: callers saw %d ok and %d refused, the control plane recorded %d ok and %d denied events",
			phase, len(ok), len(refused)+len(outageRefused), f.okEvents, f.deniedEvents)
	}
	if len(refused) == 0 {
		t.Errorf("%s: no request was refused: the budget was not exhausted", phase)
	}
	room := amount - f.okCost
	falseEnd := 0
	if room >= budgetBound {
		falseEnd = len(refused)
	}
	share := func(n int) string {
		if len(refused) == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(len(refused)))
	}
	t.Logf("%s: %d requests in %v; %d ok costing $%s of $%s (%.1f%%); overshoot %d nano-dollars",
		phase, len(r.calls), r.elapsed.Round(time.Millisecond), len(ok), catalog.FormatNanoUSD(f.okCost), catalog.FormatNanoUSD(amount),
		100*float64(f.okCost)/float64(amount), max(0, f.okCost-amount))
	t.Logf("%s: %d refusals; false at the moment %d (%s); room at the end $%s = %.2f bounds (held by data planes $%s, never granted $%s), false by the end-state criterion %d (%s)",
		phase, len(refused), len(falseNow), share(len(falseNow)), catalog.FormatNanoUSD(room), float64(room)/float64(budgetBound),
		catalog.FormatNanoUSD(f.held), catalog.FormatNanoUSD(f.ungranted), falseEnd, share(falseEnd))
	if unreachableUp > 0 {
		t.Logf("%s: %d refusals said the control plane was unreachable while it was up", phase, unreachableUp)
	}
	if r.outage != nil {
		t.Logf("%s: control plane down %v; %d requests ok while it was down, %d refused as unreachable (expected, not false); %d ok after the restart",
			phase, r.outage.backAt.Sub(r.outage.killedAt).Round(time.Millisecond), down, len(outageRefused), after)
		if down == 0 {
			// Under a loaded machine the callers may have spent what the
			// data planes held before the kill landed; what must hold is
			// above (no overshoot), so this is reported, not failed.
			t.Logf("%s: no request was served within the leases held while the control plane was down", phase)
		}
	}
}

// freeAddr is a free 127.0.0.1 address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// getJSON reads a page of the management API.
func getJSON(base, token, path string, out any) error {
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// TestBudgetDataPlaneRestarts kills a remote data plane (SIGKILL) five
// times while 10 callers keep it busy, each time with requests in flight,
// and restarts it on the same state dir and id; then the callers spend the
// rest of the day's $0.02 budget until refused. Twice, on budgets of their
// own: with the data plane's budget journal kept, and with it removed
// before each restart (a lost state dir, which is what every restart was
// before the journal: a new lease holder). Asserted: no overshoot in
// either, on any UTC day (the budget is a day's: see dayCosts.overshoot),
// and less never spent with the journal (unless the run crossed midnight,
// when a day's budget was left before its end). Logged: the share of the
// amount never spent in each (requests in flight at a kill are billed
// from the request journal, reason crashed, and count at that cost with
// the budget journal; without it the dead process's whole lease is
// stranded).
func TestBudgetDataPlaneRestarts(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) { budgetDataPlaneRestarts(t, d) })
	}
}

func budgetDataPlaneRestarts(t *testing.T, d storetest.Dialect) {
	ctx := context.Background()
	p := startBudgetPlanes(t, d, "restart")
	owner := p.owner
	up := providerstest.NewOpenAI(t, "sk-upstream-restart")
	// Long enough that a kill finds requests in flight.
	up.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: budgetIn, Output: budgetOut}, Delay: 150 * time.Millisecond})
	if _, err := owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	const amount = "0.02"
	tokens := map[string]string{}
	for _, ws := range []string{"kept", "lost"} {
		if _, err := owner.CreateWorkspace(ctx, "default", wire.WorkspaceCreate{Name: ws}); err != nil {
			t.Fatal(err)
		}
		tokens[ws] = budgetWorkspace(t, owner, ws, amount)
	}
	limit, _ := catalog.ParseNanoUSD(amount)
	never := map[string]int64{}
	crossed := false
	for _, ws := range []string{"kept", "lost"} {
		dir := t.TempDir()
		id := "dp-" + ws
		dpEnv := p.dataPlaneEnv(t, id, dir)
		dp := startServe(t, dpEnv...)
		enrollDataPlane(t, owner, id, "default")
		waitFor(t, id+" to serve", func() bool {
			status, _ := budgetPost(dp.URL, tokens[ws])
			return status == http.StatusOK
		})
		for range 5 {
			stop := budgetCallers10(dp.URL, tokens[ws])
			time.Sleep(500 * time.Millisecond)
			_ = dp.cmd.Process.Kill()
			<-dp.done
			stop()
			if ws == "lost" {
				if err := os.Remove(filepath.Join(dir, "dataplane", "budgets.journal")); err != nil {
					t.Fatal(err)
				}
			}
			dp = startServe(t, dpEnv...)
		}
		// The rest, until the first refusal, which is final.
		for n := 0; ; n++ {
			status, body := budgetPost(dp.URL, tokens[ws])
			if status == http.StatusOK {
				continue
			}
			if status != http.StatusPaymentRequired || !strings.Contains(body, "has no room for this request; it resets") || n > 1000 {
				t.Fatalf("%s, after %d requests: %d %s", ws, n, status, body)
			}
			break
		}
		var f budgetFigures
		waitFor(t, "the spooled usage events of "+ws, func() bool {
			var err error
			f, err = usageFigures(p.cp.URL, p.token, ws)
			return err == nil && f.deniedEvents >= 1
		})
		time.Sleep(2 * time.Second) // the spool ships every poll interval; let the last batch land
		var err error
		if f, err = usageFigures(p.cp.URL, p.token, ws); err != nil {
			t.Fatal(err)
		}
		if over, day := f.byDay.overshoot(limit); over > 0 {
			t.Errorf("%s: overshoot on %s: its events cost %d of %d", ws, day.Format(time.DateOnly), f.byDay[day], limit)
		}
		today, straddled := f.byDay.last()
		if straddled {
			// The budget of the day before was not spent to the end.
			t.Logf("%s ran across midnight UTC (events by day %v): what was never spent is not compared", ws, f.byDay)
			crossed = true
		}
		never[ws] = limit - today
		dp.stop(t)
	}
	t.Logf("5 kills (SIGKILL) of a busy data plane: %.1f%% of the amount never spent with its journal, %.1f%% without",
		100*float64(never["kept"])/float64(limit), 100*float64(never["lost"])/float64(limit))
	if !crossed && never["kept"] >= never["lost"] {
		t.Errorf("never spent: %d with the journal, %d without", never["kept"], never["lost"])
	}
	p.cp.stop(t)
}

// budgetPost sends the run's request to a data plane.
func budgetPost(url, token string) (int, string) {
	req, _ := http.NewRequest("POST", url+"/inf/v1/chat/completions", strings.NewReader(budgetBody))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// budgetCallers10 keeps 10 callers sending requests until the returned
// func is called; answers and errors (a killed data plane) are ignored.
func budgetCallers10(url, token string) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				if status, _ := budgetPost(url, token); status == 0 || status == http.StatusPaymentRequired || status == http.StatusTooManyRequests {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	return func() { done.Store(true); wg.Wait() }
}
