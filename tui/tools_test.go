package tui

import (
	"context"
	"testing"

	"github.com/gw-gateway/gw/client"
	"github.com/gw-gateway/gw/wire"
)

// toolSource answers a breakdown by model of the mcp provider with tool
// calls' rows, as the server does (their model is mcp/<server>/<tool>).
type toolSource struct{ *fakeSource }

func (s toolSource) Breakdown(ctx context.Context, by string, q client.UsageQuery) (wire.UsageBreakdown, error) {
	if by == "model" && q.ProviderID == MCPProvider {
		if err := s.record("breakdown:model", q); err != nil {
			return wire.UsageBreakdown{}, err
		}
		return wire.UsageBreakdown{By: by, Rows: []wire.UsageBreakdownRow{
			{Key: "mcp/github/create_issue", UsageCounters: counters(40, "0.40")},
			{Key: "mcp/search/query", UsageCounters: counters(300, "0.03")},
		}}, nil
	}
	return s.fakeSource.Breakdown(ctx, by, q)
}

// The dashboard breaks spend down by MCP tool (issue 30): the breakdown by
// model of the mcp provider's events, each tool named <server>/<tool>;
// enter filters the report to the tool; a report filtered to another
// provider has no tool calls and asks the server nothing for them.
func TestBreakdownByTool(t *testing.T) {
	fake := newFake()
	d := start(t, toolSource{fake}, fake, Options{By: ToolDimension})
	q := d.src.lastCall(t, "breakdown:model")
	if q.ProviderID != MCPProvider || q.Period != "30d" {
		t.Fatalf("the tool breakdown's query: %+v", q)
	}
	d.mustShow("By MCP tool", "github/create_issue", "search/query", "2 rows", "93.0%")
	d.mustNotShow("mcp/github/create_issue", "openai/gpt-4o")

	d.key("enter")
	if q := d.src.lastCall(t, "report"); q.ModelID != "mcp/github/create_issue" || q.ProviderID != "" {
		t.Fatalf("enter on a tool filters the report by its model: %+v", q)
	}
	d.mustShow("filters: model mcp/github/create_issue")

	// Filtered to another provider, there are no tool calls to show.
	d.key("c")
	d.key("tab") // model
	d.key("tab") // requested model
	d.key("tab") // provider
	d.key("enter")
	before := fake.callCount()
	d.key("shift+tab") // requested model
	d.key("shift+tab") // model
	d.key("shift+tab") // back to the tools
	d.mustShow("By MCP tool", "no MCP tool calls in this period")
	for _, c := range fake.calls[before:] {
		if c.q.ProviderID == MCPProvider {
			t.Errorf("a tool breakdown was asked under a provider filter: %+v", c)
		}
	}
}

// ServerBreakdown maps each dimension to the server's breakdown.
func TestServerBreakdown(t *testing.T) {
	for _, c := range []struct {
		by, provider, wantBy, wantProvider string
		ok                                 bool
	}{
		{"model", "", "model", "", true},
		{"provider", "openai", "provider", "openai", true},
		{ToolDimension, "", "model", MCPProvider, true},
		{ToolDimension, MCPProvider, "model", MCPProvider, true},
		{ToolDimension, "openai", "model", "openai", false},
	} {
		by, q, ok := ServerBreakdown(c.by, client.UsageQuery{ProviderID: c.provider})
		if by != c.wantBy || q.ProviderID != c.wantProvider || ok != c.ok {
			t.Errorf("%s under %q: %s %q %v", c.by, c.provider, by, q.ProviderID, ok)
		}
	}
	if !IsDimension(ToolDimension) || ToolName("mcp/github/create_issue") != "github/create_issue" || ToolName("openai/gpt-4o") != "openai/gpt-4o" {
		t.Error("tool is a dimension, and a tool's model id reads as server/tool")
	}
}
