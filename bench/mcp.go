package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// The MCP scenario (-scenarios mcp): one tools/call, the same 2026-07-28
// stateless request, sent to a Go SDK MCP server directly and through gw's
// whole data plane (/inf/v1/mcp/{server}: the key, tags, the tool policy,
// the server's filter, the rate limit, the budget reservation, the usage
// event and its audit row, and the hop to the upstream), in the same
// rounds, so the added latency and CPU per call come out as ratios of one
// run. See docs/performance.md, "MCP tool calls".

// mcpServerName is the MCP server's name in gw, and mcpTool its tool.
const (
	mcpServerName = "bench-tools"
	mcpTool       = "lookup"
	mcpToolPrice  = "0.000001"
)

// mcpCallBody is the tools/call both sides are sent: the 2026-07-28
// stateless form, its version and capabilities in _meta.
var mcpCallBody = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + mcpTool + `","arguments":{"key":"k-42"},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`)

// mcpCallHeaders are the 2026-07-28 request's headers.
var mcpCallHeaders = map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
	"Mcp-Method": "tools/call", "Mcp-Name": mcpTool}

// mcpAnswer is in every successful answer (the tool's text).
var mcpAnswer = []byte(`found k-42`)

type lookupIn struct {
	Key string `json:"key"`
}

// mcpUpstreamHandler is the upstream MCP server: the Go SDK's, stateless
// (so it speaks 2026-07-28) and answering JSON, with one tool.
func mcpUpstreamHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-tools", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: mcpTool, Description: "looks a key up"}, func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found " + in.Key}}}, nil, nil
	})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// mcpSetup is the MCP scenario's upstream and its targets.
type mcpSetup struct {
	up      *child
	targets []target
	// warmed: usage events the warm-up left (counted before the run).
	warmed int64
}

// startMCP starts the upstream MCP server, makes it a server of gw's
// organization, priced, with a tool policy that lets the bench keys call
// it, and waits until each gw system serves a call.
func (h *harness) startMCP() error {
	up, err := startRole("mcp-upstream")
	if err != nil {
		return err
	}
	h.stops = append(h.stops, up.stop)
	upURL := "http://" + up.addr + "/mcp"
	h.procsOf["mcp upstream"] = []proc{{label: "mcp upstream", pid: up.cmd.Process.Pid}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The policy first: once the server is in a bundle, so is the policy,
	// so a warm-up call is either "not found" (no event) or served.
	for ws := range h.g.keys {
		if _, err := h.g.owner.CreateToolPolicy(ctx, h.g.orgRef, ws, wire.ToolPolicyCreate{Name: "bench-tools",
			Definition: wire.ToolPolicyDefinition{Target: wire.ToolPolicyTarget{Kind: "workspace"},
				Rules: []wire.ToolRule{{Match: wire.ToolMatch{Servers: []string{mcpServerName}}, Phase: "call", Action: wire.ToolAction{Kind: "allow"}}}}}); err != nil {
			return fmt.Errorf("tool policy: %w", err)
		}
	}
	if _, err := h.g.owner.CreateMCPServer(ctx, client.OrgScope(h.g.orgRef), wire.MCPServerCreate{Name: mcpServerName, URL: upURL,
		Prices: map[string]string{mcpTool: mcpToolPrice}}); err != nil {
		return fmt.Errorf("MCP server: %w", err)
	}
	m := &mcpSetup{up: up, targets: []target{{name: "direct", url: upURL, body: mcpCallBody, headers: mcpCallHeaders, expect: mcpAnswer}}}
	for _, name := range []string{"gw", "dataplane"} {
		base, ok := h.gws[name]
		if !ok {
			continue
		}
		t := target{name: name, url: base + "/inf/v1/mcp/" + mcpServerName, token: h.g.keys["default"], body: mcpCallBody,
			headers: mcpCallHeaders, expect: mcpAnswer}
		if err := warmMCP(ctx, t); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		m.warmed++
		m.targets = append(m.targets, t)
	}
	h.mcp = m
	return nil
}

// warmMCP calls the tool through t until a call goes through: before the
// bundle holds the server, gw answers 404 (and meters nothing).
func warmMCP(ctx context.Context, t target) error {
	c := newClient(1)
	sink := make([]byte, 32<<10)
	for deadline := time.Now().Add(30 * time.Second); ; {
		err := do(ctx, c, t, sink)
		if err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "status 404") || time.Now().After(deadline) {
			return fmt.Errorf("never served a tools/call: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mcpLoads are the MCP scenario's two loads: one connection (latency) and
// the throughput scenarios' connections.
func (h *harness) mcpLoads() []int {
	return slices.Compact([]int{1, h.cfg.Conns})
}

// runMCP measures the MCP scenario round by round (alternating the
// systems' order) and returns the requests sent to gw systems.
func (h *harness) runMCP(results map[int]map[string]*sample) (int, error) {
	sent := 0
	clients := map[string]*http.Client{}
	for round := range h.cfg.Rounds {
		for _, conns := range h.mcpLoads() {
			order := slices.Clone(h.mcp.targets)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, t := range order {
				key := fmt.Sprintf("%s/%d", t.name, conns)
				if clients[key] == nil {
					clients[key] = newClient(conns)
				}
				procs := h.mcpProcs(t.name)
				before := cpuOf(procs)
				r := closedLoop(clients[key], t, conns, h.cfg.Duration, h.cfg.MaxRequests)
				if t.name != "direct" && h.cfg.CPUSettle > 0 {
					time.Sleep(h.cfg.CPUSettle) // charged the usage it wrote
				}
				r.cpu = cpuSpent(before, cpuOf(procs))
				if t.name != "direct" {
					sent += r.ok + r.failed
				}
				fmt.Fprintf(os.Stderr, "round %d mcp-%-5d %-9s %8.0f calls/s  p50 %s  p99 %s  (%d failed)\n",
					round+1, conns, t.name, r.rps(), ms(r.quantile(0.50)), ms(r.quantile(0.99)), r.failed)
				if r.firstErr != nil {
					fmt.Fprintf(os.Stderr, "  first failure: %v\n", r.firstErr)
				}
				if results[conns] == nil {
					results[conns] = map[string]*sample{}
				}
				if results[conns][t.name] == nil {
					results[conns][t.name] = &sample{}
				}
				results[conns][t.name].add(r)
			}
		}
	}
	return sent, nil
}

// mcpProcs are the processes a system's MCP runs are charged: the
// upstream MCP server always (its own work per call is the unit), and the
// gw processes.
func (h *harness) mcpProcs(system string) []proc {
	procs := slices.Clone(h.procsOf["mcp upstream"])
	if system != "direct" {
		procs = append(procs, h.procsOf[system]...)
	}
	return procs
}

// reportMCP prints the MCP scenario: per load and system, calls, calls/s,
// latency, and CPU µs per call of the upstream and of gw's processes; then
// the ratios: latency added over direct, gw's CPU per call as a multiple
// of the upstream's, and calls/s through gw as a share of direct.
func (h *harness) reportMCP(w io.Writer, results map[int]map[string]*sample) {
	for _, conns := range h.mcpLoads() {
		res := results[conns]
		fmt.Fprintf(w, "\n### MCP tools/call (2026-07-28, stateless), closed loop, %d connection(s): direct to a Go SDK server vs through gw's data plane\n\n", conns)
		fmt.Fprintln(w, "| system | calls | failed | calls/s | p50 | p99 | upstream CPU µs / call | gw CPU µs / call |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
		direct := res["direct"]
		for _, t := range h.mcp.targets {
			r := res[t.name]
			gwCPU := "—"
			if t.name != "direct" {
				gwCPU = cpuCell(r, h.procsOf[t.name])
			}
			fmt.Fprintf(w, "| %s | %d | %d | %.0f | %s | %s | %.1f | %s |\n", t.name, r.ok, r.failed, r.rps(), ms(r.quantile(0.50)),
				ms(r.quantile(0.99)), r.cpuPerRequest("mcp upstream"), gwCPU)
		}
		fmt.Fprintln(w)
		for _, t := range h.mcp.targets {
			if t.name == "direct" {
				continue
			}
			r := res[t.name]
			upCPU := direct.cpuPerRequest("mcp upstream")
			cpuRatio := "—"
			if upCPU > 0 {
				cpuRatio = fmt.Sprintf("%.2f×", r.cpuTotalPerRequest(h.procsOf[t.name])/upCPU)
			}
			rpsRatio := "—"
			if direct.rps() > 0 {
				rpsRatio = fmt.Sprintf("%.2f×", r.rps()/direct.rps())
			}
			p50 := "—"
			if d := direct.quantile(0.50); d > 0 {
				p50 = fmt.Sprintf("%.2f×", float64(r.quantile(0.50))/float64(d))
			}
			fmt.Fprintf(w, "%s: adds p50 %+.3f ms, p99 %+.3f ms over direct (p50 **%s** direct's); gw's CPU per call **%s** the upstream's own; calls/s %s direct's\n",
				t.name, added(r, direct, 0.50), added(r, direct, 0.99), p50, cpuRatio, rpsRatio)
		}
	}
}
