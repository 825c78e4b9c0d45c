package status

import (
	"strings"
	"testing"
)

func TestStatusUpstreamTargets(t *testing.T) {
	for _, c := range []struct{ readyz, state, detail string }{
		{`{"status":"ready"}`, "unknown", "no data plane"},
		{`{"status":"ready","upstream_targets":{"cooling_down":0,"circuit_open":0,"half_open":0}}`, "ok", "all healthy"},
		{`{"status":"ready","upstream_targets":{"cooling_down":2,"circuit_open":0,"half_open":0}}`, "ok", "2 cooling down"},
		{`{"status":"ready","upstream_targets":{"cooling_down":0,"circuit_open":1,"half_open":0}}`, "fail", "1 circuit open"},
	} {
		state, detail := upstreamTargets(c.readyz)
		if state != c.state || !strings.Contains(detail, c.detail) {
			t.Errorf("%s: %s %q", c.readyz, state, detail)
		}
	}
}
