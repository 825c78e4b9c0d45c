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

// The MCP budget run's numbers: a $0.25 budget, tools at $0.01 a call, so
// at most 25 tool calls (fewer with the model calls beside them).
const (
	mcpBudgetAmount  = "0.25"
	mcpToolPrice     = "0.01"
	mcpToolCallers   = 20  // per data plane
	mcpModelCallers  = 4   // per data plane
	mcpCallsPerCall  = 10  // tool calls at most per caller
	mcpModelPerCall  = 100 // model calls at most per caller
	mcpBudgetRunTime = 20 * time.Second
)

type mcpLookupIn struct {
	Key string `json:"key"`
}

// TestMCPBudgetAcrossDataPlanes holds one budget across a control plane
// and two remote data planes (three gw serve processes) spent by tool
// calls (and a few model calls) at once: 20 MCP callers on each data plane
// call a $0.01 tool until refused, 4 callers on each send chat
// completions, all charged to the one budget rule matching all_requests
// ($0.25). Each MCP caller initializes once, at data plane A, and sends
// its calls alternately to A and B (the sealed session works on either).
// Asserted, on both databases:
//
//   - 0 overshoot: the cost of the ok usage events (tool and model, read
//     through the control plane's API) never passes the amount, and the
//     control plane's budget state counts exactly that;
//   - a refused tool call is a JSON-RPC error (-32001, HTTP 200, naming
//     the budget) and reaches no upstream: the upstream MCP server counts
//     exactly as many tools/call as the callers got results;
//   - one usage event per call made: as many mcp events as tool calls
//     (ok and denied), each ok one costing the tool's price, as many model
//     events as model calls.
func TestMCPBudgetAcrossDataPlanes(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) { mcpBudgetAcrossDataPlanes(t, d) })
	}
}

func mcpBudgetAcrossDataPlanes(t *testing.T, d storetest.Dialect) {
	ctx := context.Background()
	p := startBudgetPlanes(t, d, "mcp_budget")
	owner := p.owner

	// The upstream MCP server (Go SDK), counting the tool calls it runs.
	var upstreamCalls atomic.Int64
	ms := mcp.NewServer(&mcp.Implementation{Name: "lookup", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "lookup"}, func(_ context.Context, _ *mcp.CallToolRequest, in mcpLookupIn) (*mcp.CallToolResult, any, error) {
		upstreamCalls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found " + in.Key}}}, nil, nil
	})
	mh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	upMCP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Lookup-Key") != "lookup-secret-0123456789" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mh.ServeHTTP(w, r)
	}))
	t.Cleanup(upMCP.Close)
	if _, err := owner.CreateMCPServer(ctx, client.OrgScope("default"), wire.MCPServerCreate{Name: "lookup", URL: upMCP.URL,
		Auth:   &wire.MCPAuth{Kind: "header", Header: "X-Lookup-Key", Secret: "lookup-secret-0123456789"},
		Prices: map[string]string{"lookup": mcpToolPrice}}); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.CreateToolPolicy(ctx, "default", "default", wire.ToolPolicyCreate{Name: "lookups",
		Definition: wire.ToolPolicyDefinition{Target: wire.ToolPolicyTarget{Kind: "workspace"},
			Rules: []wire.ToolRule{{Match: wire.ToolMatch{Servers: []string{"lookup"}}, Phase: "call", Action: wire.ToolAction{Kind: "allow"}}}}}); err != nil {
		t.Fatal(err)
	}
	// The model provider, for the model calls beside the tool calls.
	up := providerstest.NewOpenAI(t, "sk-upstream-mcp-budget")
	up.SetDefault(providerstest.Reply{Text: "ok", Usage: providerstest.Usage{Input: budgetIn, Output: budgetOut}})
	if _, err := owner.CreateCredential(ctx, client.OrgScope("default"), wire.ProviderCredentialCreate{
		Provider: "openai", Label: "fake", Secret: up.Key, BaseURL: up.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	token := budgetWorkspace(t, owner, "default", mcpBudgetAmount)
	p.startDataPlanes(t, "dp-a", "dp-b")
	dps := p.dps

	run := runMCPBudget(t, dps, token)
	amount, _ := catalog.ParseNanoUSD(mcpBudgetAmount)
	price, _ := catalog.ParseNanoUSD(mcpToolPrice)

	// Every event at the control plane, then the data planes' spend
	// reports.
	var f mcpBudgetFigures
	waitFor(t, "every usage event at the control plane", func() bool {
		var err error
		f, err = mcpUsageFigures(p.cp.URL, p.token)
		return err == nil && f.toolOK+f.toolDenied == run.toolOK+run.toolRefused && f.modelOK+f.modelDenied == run.modelOK+run.modelRefused
	})
	var states []wire.BudgetState
	waitFor(t, "the data planes' spend reports", func() bool {
		var err error
		states, err = owner.ListBudgets(ctx, "default", "default")
		if err != nil || len(states) != 1 {
			return false
		}
		spent, _ := catalog.ParseNanoUSD(states[0].SpentUSD)
		today, _ := f.byDay.last()
		return spent == today
	})

	total := f.toolCost + f.modelCost
	// The amount holds per UTC day (dayCosts.overshoot).
	over, day := f.byDay.overshoot(amount)
	if over > 0 {
		t.Errorf("overshoot of %d nano-dollars on %s: its events cost %d of %d", over, day.Format(time.DateOnly), f.byDay[day], amount)
	}
	if got := upstreamCalls.Load(); got != run.toolOK {
		t.Errorf("the upstream ran %d tool calls; the callers got %d results (a refused call reached it)", got, run.toolOK)
	}
	if f.toolOK != run.toolOK || f.toolDenied != run.toolRefused || f.modelOK != run.modelOK || f.modelDenied != run.modelRefused {
		t.Errorf("events: tools %d ok %d denied, models %d ok %d denied; callers saw tools %d ok %d refused, models %d ok %d refused",
			f.toolOK, f.toolDenied, f.modelOK, f.modelDenied, run.toolOK, run.toolRefused, run.modelOK, run.modelRefused)
	}
	if f.toolCost != int64(f.toolOK)*price {
		t.Errorf("ok tool events cost %d, want %d × %d", f.toolCost, f.toolOK, price)
	}
	if f.other != 0 {
		t.Errorf("%d events are errors or of another kind", f.other)
	}
	if run.toolRefused == 0 {
		t.Error("no tool call was refused: the budget was not exhausted")
	}
	if run.toolOK == 0 || run.modelOK == 0 {
		t.Errorf("%d tool calls and %d model calls went through", run.toolOK, run.modelOK)
	}
	for _, p := range run.problems {
		t.Error(p)
	}
	t.Logf("%d tool calls (%d ok, %d refused), %d model calls (%d ok, %d refused) in %v; ok spend $%s of $%s (%.1f%%), overshoot %d; upstream tools/call %d",
		run.toolOK+run.toolRefused, run.toolOK, run.toolRefused, run.modelOK+run.modelRefused, run.modelOK, run.modelRefused,
		run.elapsed.Round(time.Millisecond), catalog.FormatNanoUSD(total), mcpBudgetAmount, 100*float64(total)/float64(amount),
		max(0, over), upstreamCalls.Load())
	p.stop(t)
}

// mcpBudgetRun is what the callers saw.
type mcpBudgetRun struct {
	toolOK, toolRefused, modelOK, modelRefused int64
	problems                                   []string
	elapsed                                    time.Duration
}

// runMCPBudget runs the tool and model callers until each is refused,
// sends its share or the time limit passes.
func runMCPBudget(t *testing.T, dps []*server, token string) *mcpBudgetRun {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: mcpToolCallers + mcpModelCallers}}
	defer hc.CloseIdleConnections()
	run := &mcpBudgetRun{}
	var mu sync.Mutex
	problem := func(format string, args ...any) {
		mu.Lock()
		run.problems = append(run.problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	post := func(u string, hdr map[string]string, body string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest("POST", u, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	start := time.Now()
	deadline := start.Add(mcpBudgetRunTime)
	var wg sync.WaitGroup
	for range dps {
		for c := range mcpToolCallers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, body, err := post(dps[0].URL+"/inf/v1/mcp", nil,
					`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
				if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
					problem("initialize: %v %s", err, body)
					return
				}
				hdr := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"}
				if _, _, err := post(dps[0].URL+"/inf/v1/mcp", hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
					problem("initialized: %v", err)
					return
				}
				for i := range mcpCallsPerCall {
					if time.Now().After(deadline) {
						return
					}
					dp := dps[(c+i)%len(dps)]
					resp, body, err := post(dp.URL+"/inf/v1/mcp", hdr,
						fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup__lookup","arguments":{"key":"k%d"}}}`, i+1, i))
					if err != nil {
						problem("tools/call: %v", err)
						return
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
					if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &m) != nil {
						problem("tools/call answered %d: %s", resp.StatusCode, body)
						return
					}
					switch {
					case m.Result != nil && !m.Result.IsError && len(m.Result.Content) == 1 && m.Result.Content[0].Text == fmt.Sprintf("found k%d", i):
						atomic.AddInt64(&run.toolOK, 1)
					case m.Error != nil && m.Error.Code == -32001 && strings.Contains(m.Error.Message, "budget"):
						atomic.AddInt64(&run.toolRefused, 1)
						return
					default:
						problem("tools/call answered %s", body)
						return
					}
				}
			}()
		}
	}
	for dp := range dps {
		for range mcpModelCallers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range mcpModelPerCall {
					if time.Now().After(deadline) {
						return
					}
					resp, body, err := post(dps[dp].URL+"/inf/v1/chat/completions", nil, budgetBody)
					if err != nil {
						problem("chat: %v", err)
						return
					}
					switch {
					case resp.StatusCode == http.StatusOK:
						atomic.AddInt64(&run.modelOK, 1)
					case (resp.StatusCode == http.StatusPaymentRequired || resp.StatusCode == http.StatusTooManyRequests) &&
						strings.Contains(string(body), `"type":"insufficient_quota"`):
						atomic.AddInt64(&run.modelRefused, 1)
						return
					default:
						problem("chat answered %d: %s", resp.StatusCode, body)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	run.elapsed = time.Since(start)
	return run
}

// mcpBudgetFigures are the workspace's usage events, by kind and status.
type mcpBudgetFigures struct {
	toolOK, toolDenied, modelOK, modelDenied int64
	toolCost, modelCost                      int64
	other                                    int
	byDay                                    dayCosts
}

func mcpUsageFigures(cpURL, token string) (mcpBudgetFigures, error) {
	f := mcpBudgetFigures{byDay: dayCosts{}}
	cursor := ""
	for range 100 {
		q := url.Values{"limit": {"200"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page wire.Page[wire.UsageEvent]
		if err := getJSON(cpURL, token, "/api/v1/organizations/default/workspaces/default/usage-events?"+q.Encode(), &page); err != nil {
			return f, err
		}
		for _, ev := range page.Data {
			cost, err := catalog.ParseNanoUSD(ev.CostUSD)
			if err != nil {
				return f, err
			}
			f.byDay.add(ev.OccurredAt, cost)
			tool := ev.Endpoint != nil && *ev.Endpoint == "mcp"
			if tool && (ev.Model != "mcp/lookup/lookup" || ev.Provider != "mcp") {
				f.other++
				continue
			}
			switch {
			case tool && ev.Status == "ok":
				f.toolOK++
				f.toolCost += cost
			case tool && ev.Status == "denied" && cost == 0:
				f.toolDenied++
			case !tool && ev.Status == "ok":
				f.modelOK++
				f.modelCost += cost
			case !tool && ev.Status == "denied" && cost == 0:
				f.modelDenied++
			default:
				f.other++
			}
		}
		if page.Page.NextCursor == nil {
			return f, nil
		}
		cursor = *page.Page.NextCursor
	}
	return f, fmt.Errorf("more than 100 pages of events")
}
