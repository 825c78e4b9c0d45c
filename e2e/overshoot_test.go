package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers/providerstest"
	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// The overshoot run's numbers: a chat completion costs budgetCost
// ($0.0000495), a tool call $0.0002 (about four chat completions).
const (
	overshootReachable  = "0.02" // the budget of the phase with the control plane up
	overshootOutage     = "0.04" // and of the phase with two kills
	overshootToolPrice  = "0.0002"
	overshootChatCalls  = 80 // callers of each kind, spread over the data planes
	overshootToolCalls  = 20
	overshootRunLimit   = 30 * time.Second
	overshootDown       = 1500 * time.Millisecond // how long each kill keeps the control plane down
	overshootUpstreamMS = 20
)

// TestBudgetOvershootBound holds the bound docs/budgets.md publishes ("The
// overshoot bound"): for each budget, the usage events' total cost never
// passes the amount by more than what requests flagged over_bound cost
// beyond what they held (with an honest upstream, as here: none, so the
// bound is 0) — with the control plane reachable, and with it killed
// (SIGKILL) and restarted twice while 100 callers spend through three data
// planes, when each plane spends within the leases it holds.
//
// Three remote data planes, one control plane (SQLite or PostgreSQL), two
// phases on workspaces of their own: reachable, and outage (the control
// plane killed once a quarter of the budget is spent and once 60% is, each
// time restarted 1.5 s later on the same database and address). 80 callers
// send chat completions and 20 call a priced MCP tool, spread over the
// planes, each until its budget refuses it for good; a caller refused
// because the control plane is unreachable waits for the restart and goes
// on. Asserted in each phase, once the spools have drained:
//
//   - Σ cost of the usage events ≤ amount + Σ over the events flagged
//     over_bound of what they cost beyond their bound; none is flagged
//     (the upstreams report what the bound allows), so ≤ amount;
//   - every request delivered (a 200 answer, a tool result) has exactly one
//     usage event, ok, at its cost — never less recorded than delivered —;
//     every refused one exactly one denied event at $0; no other events;
//   - the control plane's budget state counts the events' cost exactly.
//
// Each kind of caller is an overshootLoad. Batches (issue 34 part 1) are
// mixed in beside them: the control plane is an all-in-one gw whose own
// data plane, the only one that runs batches, gets two batches a phase at
// its start and runs their lines through the kills
// (overshootbatch_test.go); their lines' events are counted in the bound
// and checked line by line.
func TestBudgetOvershootBound(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) { budgetOvershootBound(t, d) })
	}
}

func budgetOvershootBound(t *testing.T, d storetest.Dialect) {
	ctx := context.Background()
	p := startBudgetPlanes(t, d, "overshoot", "GW_ROLE=all", "GW_BATCH_PACE="+overshootBatchPace)
	owner := p.owner
	up := providerstest.NewOpenAI(t, "sk-upstream-overshoot")
	up.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: budgetIn, Output: budgetOut},
		Delay: overshootUpstreamMS * time.Millisecond})
	// The batches run on gw's own runner (settings.batches "gateway"),
	// whose every line holds its bound as it is sent: a provider batch's
	// hold on the budgets lives in its process, and a control plane
	// killed mid-batch drops it (docs/batches.md, what remains).
	if _, err := owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL(), Settings: &wire.CredentialSettings{Batches: "gateway"}}); err != nil {
		t.Fatal(err)
	}
	var toolRuns atomic.Int64
	toolURL := overshootToolServer(t, &toolRuns)
	if _, err := owner.CreateMCPServer(ctx, client.OrgScope("default"), wire.MCPServerCreate{Name: "lookup", URL: toolURL,
		Prices: map[string]string{"lookup": overshootToolPrice}}); err != nil {
		t.Fatal(err)
	}
	amounts := map[string]string{"reachable": overshootReachable, "outage": overshootOutage}
	tokens := map[string]string{}
	for _, ws := range []string{"reachable", "outage"} {
		if _, err := owner.CreateWorkspace(ctx, "default", wire.WorkspaceCreate{Name: ws}); err != nil {
			t.Fatal(err)
		}
		if _, err := owner.CreateToolPolicy(ctx, "default", ws, wire.ToolPolicyCreate{Name: "lookups",
			Definition: wire.ToolPolicyDefinition{Target: wire.ToolPolicyTarget{Kind: "workspace"},
				Rules: []wire.ToolRule{{Match: wire.ToolMatch{Servers: []string{"lookup"}}, Phase: "call", Action: wire.ToolAction{Kind: "allow"}}}}}); err != nil {
			t.Fatal(err)
		}
		tokens[ws] = budgetWorkspace(t, owner, ws, amounts[ws])
	}
	p.startDataPlanes(t, "dp-a", "dp-b", "dp-c")
	price, _ := catalog.ParseNanoUSD(overshootToolPrice)
	loads := []overshootLoad{
		{kind: "chat.completions", callers: overshootChatCalls, call: overshootChat},
		{kind: "mcp", callers: overshootToolCalls, start: overshootToolSession, call: overshootToolCall(price)},
	}

	toolsDelivered, upstreamServed, journalBilled := 0, 0, 0
	for _, ws := range []string{"reachable", "outage"} {
		amount, _ := catalog.ParseNanoUSD(amounts[ws])
		var kills []float64
		if ws == "outage" {
			kills = []float64{0.25, 0.6}
		}
		batches := overshootBatchSubmit(t, p, tokens[ws], ws)
		run := runOvershoot(t, p, tokens[ws], ws, loads, amount, kills)
		overshootBatchCollect(t, p, tokens[ws], ws, batches, run)
		if len(run.killed) != len(kills) {
			t.Fatalf("%s: the control plane was killed %d times of %d (the callers spent too little)", ws, len(run.killed), len(kills))
		}
		f := overshootCheck(t, p, ws, run, amount)
		over, _ := f.byDay.overshoot(amount)
		toolsDelivered += run.deliveredOf["mcp"]
		upstreamServed += run.deliveredOf["chat.completions"] + run.deliveredOf["batch"]
		journalBilled += f.journalBilled
		t.Logf("%s: %d requests delivered (%d tool calls, %d batch lines), %d refused for good, %d refused while the control plane was down; "+
			"batch lines: %d refused, %d interrupted (%d billed by the journal); "+
			"events cost $%s of $%s (%.2f%%), overshoot %d; delivered while the control plane was down (nano-dollars): %v; %v",
			ws, len(run.delivered), run.deliveredOf["mcp"], run.deliveredOf["batch"], run.final, run.unreachable,
			run.refusedLines, len(run.interrupted), f.journalBilled,
			catalog.FormatNanoUSD(f.cost), amounts[ws], 100*float64(f.cost)/float64(amount), max(0, over), run.cut,
			run.elapsed.Round(time.Millisecond))
	}
	// A refused tool call reaches no upstream.
	if got := toolRuns.Load(); got != int64(toolsDelivered) || got == 0 {
		t.Errorf("the tool upstream ran %d calls; the callers got %d results", got, toolsDelivered)
	}
	// The model upstream served the chat completions delivered and the
	// batch lines completed, and at most the interrupted lines the journal
	// billed (journaled as they went upstream, a kill may have cut one
	// before it got there): no request refused reached it, none went
	// unbilled.
	if got := len(up.Requests()); got < upstreamServed || got > upstreamServed+journalBilled {
		t.Errorf("the model upstream served %d requests; delivered and completed: %d, and %d interrupted lines billed",
			got, upstreamServed, journalBilled)
	}
	p.stop(t)
}

// overshootLoad is one kind of spending request: each of its callers
// sends them, one after another, until its budget refuses one for good or
// the run's time is up.
type overshootLoad struct {
	// kind is the endpoint of the usage events it leaves.
	kind    string
	callers int
	// start prepares caller c (an MCP session); nil: nothing to prepare.
	start func(c *overshootCaller) error
	// call sends caller c's request with request id rid.
	call func(c *overshootCaller, rid string) overshootOutcome
}

// overshootCaller is one caller: its data planes (it sends its n-th
// request to planes[(index+n) % len]) and what its start kept.
type overshootCaller struct {
	hc      *http.Client
	planes  []*server
	index   int
	n       int
	token   string
	session map[string]string
}

// plane is the data plane the caller's next request goes to.
func (c *overshootCaller) plane() *server { return c.planes[(c.index+c.n)%len(c.planes)] }

// post sends body to the data plane's path with the caller's key, the
// request id and hdr.
func (c *overshootCaller) post(dp *server, path, rid, body string, hdr map[string]string) (int, http.Header, []byte, error) {
	req, _ := http.NewRequest("POST", dp.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if rid != "" {
		req.Header.Set("X-Request-Id", rid)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// What became of a request.
type overshootResult int

const (
	// delivered: answered (a 200, a tool result); its cost is known.
	overshootDelivered overshootResult = iota
	// refused for good: the budget has no room left this period.
	overshootFinal
	// refused while the control plane was unreachable and the plane's
	// leases were spent, or while requests in flight held the room: not
	// final, the caller goes on (after the restart).
	overshootUnreachable
	overshootBusy
	// anything else fails the test.
	overshootProblem
)

// overshootDone is a delivered request: its events' endpoint and cost.
type overshootDone struct {
	kind string
	cost int64
	// batch is the batch a line was of ("" for a synchronous request).
	batch string
}

type overshootOutcome struct {
	result overshootResult
	cost   int64
	detail string
}

// overshootRefusal classifies a budget refusal by its message, the same
// in every shape (docs/budgets.md, "Waiting for room, and refusals").
func overshootRefusal(msg string) overshootResult {
	switch {
	case strings.Contains(msg, "Budget exceeded:") && strings.Contains(msg, "has no room for this request; it resets"):
		return overshootFinal
	case strings.Contains(msg, "Budget unavailable: this gateway cannot reach the control plane"):
		return overshootUnreachable
	case strings.Contains(msg, "Budget busy:"):
		return overshootBusy
	}
	return overshootProblem
}

func overshootChat(c *overshootCaller, rid string) overshootOutcome {
	status, _, body, err := c.post(c.plane(), "/inf/v1/chat/completions", rid, budgetBody, nil)
	switch {
	case err != nil:
		return overshootOutcome{result: overshootProblem, detail: err.Error()}
	case status == http.StatusOK:
		return overshootOutcome{result: overshootDelivered, cost: budgetCost}
	}
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	if r := overshootRefusal(e.Error.Message); r != overshootProblem {
		return overshootOutcome{result: r}
	}
	return overshootOutcome{result: overshootProblem, detail: fmt.Sprintf("chat answered %d: %s", status, body)}
}

// overshootToolSession opens the caller's MCP session, at its first data
// plane: the sealed session works on every plane.
func overshootToolSession(c *overshootCaller) error {
	status, h, body, err := c.post(c.plane(), "/inf/v1/mcp", "",
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, nil)
	if err != nil || status != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
		return fmt.Errorf("initialize: %d %v %s", status, err, body)
	}
	c.session = map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"}
	if _, _, _, err := c.post(c.plane(), "/inf/v1/mcp", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, c.session); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	return nil
}

func overshootToolCall(price int64) func(c *overshootCaller, rid string) overshootOutcome {
	return func(c *overshootCaller, rid string) overshootOutcome {
		status, _, body, err := c.post(c.plane(), "/inf/v1/mcp", rid,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup__lookup","arguments":{"key":%q}}}`, c.n+1, rid), c.session)
		if err != nil {
			return overshootOutcome{result: overshootProblem, detail: err.Error()}
		}
		var m struct {
			Result *struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &m) != nil {
			return overshootOutcome{result: overshootProblem, detail: fmt.Sprintf("tools/call answered %d: %s", status, body)}
		}
		switch {
		case m.Result != nil && !m.Result.IsError && len(m.Result.Content) == 1 && m.Result.Content[0].Text == "found "+rid:
			return overshootOutcome{result: overshootDelivered, cost: price}
		case m.Error != nil && m.Error.Code == -32001:
			if r := overshootRefusal(m.Error.Message); r != overshootProblem {
				return overshootOutcome{result: r}
			}
		}
		return overshootOutcome{result: overshootProblem, detail: fmt.Sprintf("tools/call answered %s", body)}
	}
}

// overshootToolServer is the upstream MCP server: one tool, lookup, that
// answers "found KEY" and counts its runs.
func overshootToolServer(t *testing.T, runs *atomic.Int64) string {
	ms := mcp.NewServer(&mcp.Implementation{Name: "lookup", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "lookup"}, func(_ context.Context, _ *mcp.CallToolRequest, in mcpLookupIn) (*mcp.CallToolResult, any, error) {
		runs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found " + in.Key}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// overshootRun is what the callers saw.
type overshootRun struct {
	// delivered maps a delivered request's id to its kind and cost, refused
	// holds the ids of the requests refused (for good, or not).
	delivered   map[string]overshootDone
	deliveredOf map[string]int
	refused     map[string]bool
	// final and unreachable count the refusals of each sort.
	final, unreachable int
	killed             []time.Time
	// cut is what the callers were delivered while the control plane was
	// down, each time: within the leases the planes held.
	cut     []int64
	elapsed time.Duration
	// The batch lines (overshootBatchCollect): batch maps a line that was
	// run (delivered or refused) to its batch; interrupted holds the lines
	// a kill ended in flight; refusedLines counts the refused ones.
	batch        map[string]string
	interrupted  map[string]bool
	refusedLines int
}

// runOvershoot runs every load's callers on the phase's workspace (its
// key, token; phase prefixes the request ids) until each is refused for
// good or the time limit passes; at each share of the amount in kills
// (spent as the callers count it), the control plane is killed, and
// restarted overshootDown later.
func runOvershoot(t *testing.T, p *budgetPlanes, token, phase string, loads []overshootLoad, amount int64, kills []float64) *overshootRun {
	t.Helper()
	callers := 0
	for _, l := range loads {
		callers += l.callers
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: callers}}
	defer hc.CloseIdleConnections()
	run := &overshootRun{delivered: map[string]overshootDone{}, deliveredOf: map[string]int{}, refused: map[string]bool{}}
	var (
		mu    sync.Mutex
		spent atomic.Int64
		// up is closed while the control plane is up: callers refused as
		// unreachable wait on it.
		upMu sync.Mutex
		up   = make(chan struct{})
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	close(up)
	problem := func(format string, args ...any) {
		t.Helper()
		t.Errorf(phase+": "+format, args...)
	}
	start := time.Now()
	deadline := start.Add(overshootRunLimit)
	if len(kills) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, share := range kills {
				for float64(spent.Load()) < share*float64(amount) {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
				upMu.Lock()
				up = make(chan struct{})
				upMu.Unlock()
				p.killControlPlane()
				before := spent.Load()
				mu.Lock()
				run.killed = append(run.killed, time.Now())
				mu.Unlock()
				time.Sleep(overshootDown)
				p.restartControlPlane(t)
				mu.Lock()
				run.cut = append(run.cut, spent.Load()-before)
				mu.Unlock()
				upMu.Lock()
				close(up)
				upMu.Unlock()
			}
		}()
	}
	var callersWG sync.WaitGroup
	index := 0
	for _, l := range loads {
		for range l.callers {
			c := &overshootCaller{hc: hc, planes: p.dps, index: index, token: token}
			index++
			callersWG.Add(1)
			go func() {
				defer callersWG.Done()
				if l.start != nil {
					if err := l.start(c); err != nil {
						problem("%s caller %d: %v", l.kind, c.index, err)
						return
					}
				}
				for ; time.Now().Before(deadline); c.n++ {
					rid := fmt.Sprintf("%s-%d-%d", phase, c.index, c.n)
					o := l.call(c, rid)
					mu.Lock()
					switch o.result {
					case overshootDelivered:
						run.delivered[rid] = overshootDone{kind: l.kind, cost: o.cost}
						run.deliveredOf[l.kind]++
						spent.Add(o.cost)
					case overshootFinal:
						run.refused[rid] = true
						run.final++
					case overshootUnreachable, overshootBusy:
						run.refused[rid] = true
						if o.result == overshootUnreachable {
							run.unreachable++
						}
					}
					mu.Unlock()
					switch o.result {
					case overshootFinal:
						return
					case overshootProblem:
						problem("%s caller %d: %s", l.kind, c.index, o.detail)
						return
					case overshootUnreachable:
						upMu.Lock()
						back := up
						upMu.Unlock()
						select {
						case <-back:
						case <-time.After(time.Until(deadline)):
						}
						// Back already: the plane has not reached the new
						// process yet.
						time.Sleep(50 * time.Millisecond)
					case overshootBusy:
						time.Sleep(100 * time.Millisecond)
					}
				}
			}()
		}
	}
	callersWG.Wait()
	close(stop)
	wg.Wait()
	run.elapsed = time.Since(start)
	return run
}

// overshootFigures are the phase's usage events as the control plane
// recorded them.
type overshootFigures struct {
	cost  int64
	byDay dayCosts
	// byRequest counts each request id's events; statuses and costs are
	// checked as they are read.
	byRequest map[string]int
	overBound int
	// journalBilled counts the interrupted batch lines with an event.
	journalBilled int
	problems      []string
}

// overshootCheck waits until every request the callers saw has its event
// at the control plane and the data planes have reported their spend, then
// asserts the bound and one event per request.
func overshootCheck(t *testing.T, p *budgetPlanes, ws string, run *overshootRun, amount int64) overshootFigures {
	t.Helper()
	var f overshootFigures
	waitFor(t, ws+": every request's usage event at the control plane", func() bool {
		var err error
		f, err = overshootEvents(p.cp.URL, p.token, ws, run)
		return err == nil && len(f.byRequest)-f.journalBilled >= len(run.delivered)+len(run.refused)
	})
	var states []wire.BudgetState
	waitFor(t, ws+": the data planes' spend reports", func() bool {
		var err error
		states, err = p.owner.ListBudgets(context.Background(), "default", ws)
		if err != nil || len(states) != 1 {
			return false
		}
		spent, _ := catalog.ParseNanoUSD(states[0].SpentUSD)
		today, _ := f.byDay.last()
		return spent == today
	})
	// Read again: an event shipped late would show here.
	f, err := overshootEvents(p.cp.URL, p.token, ws, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range f.problems {
		t.Errorf("%s: %s", ws, pr)
	}
	for rid := range run.delivered {
		if f.byRequest[rid] != 1 {
			t.Errorf("%s: delivered request %s has %d usage events", ws, rid, f.byRequest[rid])
		}
	}
	for rid := range run.refused {
		if f.byRequest[rid] != 1 {
			t.Errorf("%s: refused request %s has %d usage events", ws, rid, f.byRequest[rid])
		}
	}
	for rid := range run.interrupted {
		if f.byRequest[rid] > 1 {
			t.Errorf("%s: interrupted batch line %s has %d usage events", ws, rid, f.byRequest[rid])
		}
	}
	if n := len(f.byRequest) - f.journalBilled; n != len(run.delivered)+len(run.refused) {
		t.Errorf("%s: %d requests have events; the callers sent %d", ws, n, len(run.delivered)+len(run.refused))
	}
	// The bound: with no event flagged over_bound, the amount itself.
	if f.overBound != 0 {
		t.Errorf("%s: %d events over their bound, from an honest upstream", ws, f.overBound)
	}
	// A day budget's amount holds per UTC day (a run across midnight spends
	// up to it on each side): dayCosts.overshoot.
	if over, day := f.byDay.overshoot(amount); over > 0 {
		t.Errorf("%s: overshoot of %d nano-dollars on %s: its events cost %d of %d", ws, over, day.Format(time.DateOnly), f.byDay[day], amount)
	}
	if run.final == 0 {
		t.Errorf("%s: no request was refused for good: the budget was not spent", ws)
	}
	return f
}

// overshootEvents reads the workspace's usage events: their cost, one
// count per request id, and what does not fit the callers' account (an
// event of a request id no caller sent, a delivered request's event not
// ok at its cost, a refused one's not denied at $0).
func overshootEvents(cpURL, token, ws string, run *overshootRun) (overshootFigures, error) {
	f := overshootFigures{byRequest: map[string]int{}, byDay: dayCosts{}}
	cursor := ""
	for range 200 {
		q := url.Values{"limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page wire.Page[wire.UsageEvent]
		if err := getJSON(cpURL, token, "/api/v1/organizations/default/workspaces/"+ws+"/usage-events?"+q.Encode(), &page); err != nil {
			return f, err
		}
		for _, ev := range page.Data {
			cost, err := catalog.ParseNanoUSD(ev.CostUSD)
			if err != nil {
				return f, err
			}
			f.cost += cost
			f.byDay.add(ev.OccurredAt, cost)
			if ev.Provenance != nil && ev.Provenance.OverBound {
				f.overBound++
			}
			rid := ""
			if ev.RequestID != nil {
				rid = *ev.RequestID
			}
			f.byRequest[rid]++
			done, delivered := run.delivered[rid]
			batch := ""
			if ev.BatchID != nil {
				batch = *ev.BatchID
			}
			switch {
			case delivered && (ev.Status != "ok" || ev.Endpoint == nil || *ev.Endpoint != done.kind || cost != done.cost):
				f.problems = append(f.problems, fmt.Sprintf("delivered %s request %s (cost %d) has a %s event of endpoint %v costing %d",
					done.kind, rid, done.cost, ev.Status, ev.Endpoint, cost))
			case run.interrupted[rid]:
				// Journaled as it went upstream, and billed: cut in flight,
				// an error, reason crashed, at an estimate of what it was
				// sent, never $0 (the journal at the next start); ended
				// before the kill but not yet written to its batch, ok at
				// its cost (its answer is in no output file).
				f.journalBilled++
				crashed := ev.Status == "error" && ev.Reason != nil && *ev.Reason == "crashed" && cost > 0
				if !crashed && (ev.Status != "ok" || cost != overshootBatchCost) {
					f.problems = append(f.problems, fmt.Sprintf("interrupted batch line %s has a %s event costing %s", rid, ev.Status, ev.CostUSD))
				}
			case (delivered || run.refused[rid]) && batch != run.batch[rid]:
				f.problems = append(f.problems, fmt.Sprintf("request %s's event names batch %q, not %q", rid, batch, run.batch[rid]))
			case run.refused[rid] && (ev.Status != "denied" || cost != 0):
				f.problems = append(f.problems, fmt.Sprintf("refused request %s has a %s event costing %s", rid, ev.Status, ev.CostUSD))
			case !delivered && !run.refused[rid]:
				f.problems = append(f.problems, fmt.Sprintf("event %s (%s, %s) is of request %q, which no caller saw answered", ev.ID, ev.Status, ev.CostUSD, rid))
			}
		}
		if page.Page.NextCursor == nil {
			return f, nil
		}
		cursor = *page.Page.NextCursor
	}
	return f, fmt.Errorf("more than 200 pages of events")
}
