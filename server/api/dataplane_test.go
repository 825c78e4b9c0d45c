package api_test

import (
	"testing"
	"time"

	"github.com/gw-gateway/gw/wire"
)

func TestHeartbeatKeepsFirstSeen(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		hb := map[string]any{"id": "dp", "version": "1", "bundle_versions": map[string]any{}, "spool_depth": 0}
		first := decodeData[wire.DataPlaneInstance](t, e.must("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb))
		again := decodeData[wire.DataPlaneInstance](t, e.must("POST", "/api/v1/data-plane/heartbeats", e.ownerKey, hb))
		if !again.FirstSeenAt.Equal(first.FirstSeenAt) || again.LastSeenAt.Before(first.LastSeenAt) {
			t.Fatalf("first %+v, again %+v", first, again)
		}
	})
}

func TestIngestBoundsTokenCounts(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ev := e.usageEvent(time.Now(), "openai/gpt-4o", 1<<62, 1, "1")
		code, raw := e.do("POST", "/api/v1/data-plane/usage-events", e.ownerKey, map[string]any{"events": []any{ev}})
		if code != 422 || !containsAll(issueSet(t, raw), []string{"body.events.0.input_tokens:less_than_equal"}) {
			t.Fatalf("huge token count: %d %s", code, raw)
		}
	})
}
