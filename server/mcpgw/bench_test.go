package mcpgw_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gw-gateway/gw/server/mcpgw"
	"github.com/gw-gateway/gw/server/toolpolicy"
)

// BenchmarkToolsCall measures one tools/call of the Go SDK's client
// against a Go SDK upstream, directly and through gw (the gateway alone,
// with a guard that allows: no data plane, no metering), in one run, so
// the ratio is gw's added cost per call. Run:
//
//	go test ./server/mcpgw -run XXX -bench ToolsCall -benchmem
func BenchmarkToolsCall(b *testing.B) {
	up := upstream(b, nil)
	g := &guard{servers: []*mcpgw.Upstream{{ID: "1", Name: "plain", URL: up.URL}}, allow: true}
	gw := gateway(b, g, 10*time.Second)
	ctx := context.Background()
	run := func(b *testing.B, url, name string, rt http.RoundTripper) {
		cs := connectB(b, url, rt)
		args := map[string]any{"text": "hi"}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		g.taken()
	}
	b.Run("direct", func(b *testing.B) { run(b, up.URL, "echo", http.DefaultTransport) })
	b.Run("through_gw", func(b *testing.B) { run(b, gw.URL+"/mcp", "plain__echo", bearerTransport{bearer}) })
	_ = toolpolicy.PhaseCall
}

func connectB(b *testing.B, url string, rt http.RoundTripper) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpgw.V20251125})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}
