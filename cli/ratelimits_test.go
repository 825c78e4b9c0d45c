package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

func TestRateLimitsRun(t *testing.T) {
	e := newResEnv(t)
	var w wire.Workspace
	if err := json.Unmarshal([]byte(e.ok("workspaces", "update", "--rpm", "100", "--tpm", "50000", "-o", "json")), &w); err != nil {
		t.Fatal(err)
	}
	if w.RateLimits == nil || *w.RateLimits.RequestsPerMinute != 100 || *w.RateLimits.TokensPerMinute != 50000 {
		t.Fatalf("workspace: %+v", w.RateLimits)
	}
	var k wire.InferenceKey
	if err := json.Unmarshal([]byte(e.ok("inference-keys", "create", "--name", "app", "--rpm", "10", "-o", "json")), &k); err != nil {
		t.Fatal(err)
	}
	if k.RateLimits == nil || *k.RateLimits.RequestsPerMinute != 10 || k.RateLimits.TokensPerMinute != nil {
		t.Fatalf("create: %+v", k.RateLimits)
	}
	// --tpm leaves the key's rpm as it is.
	if err := json.Unmarshal([]byte(e.ok("inference-keys", "update", k.ID.String(), "--tpm", "2000", "-o", "json")), &k); err != nil {
		t.Fatal(err)
	}
	if k.RateLimits == nil || *k.RateLimits.RequestsPerMinute != 10 || *k.RateLimits.TokensPerMinute != 2000 {
		t.Fatalf("update: %+v", k.RateLimits)
	}
	// Above the workspace's: the server's 422 names the member.
	r := e.code(ExitError, "", "inference-keys", "update", k.ID.String(), "--rpm", "101")
	if !strings.Contains(r.errOut, "requests_per_minute") {
		t.Fatalf("stderr: %s", r.errOut)
	}
	if out := e.ok("inference-keys", "get", k.ID.String()); !strings.Contains(out, "10 rpm, 2000 tpm") {
		t.Fatalf("get: %s", out)
	}
	if out := e.ok("inference-keys", "update", k.ID.String(), "--no-rate-limits"); !strings.Contains(out, "rate_limits\t-") {
		t.Fatalf("cleared: %s", out)
	}
	if out := e.ok("workspaces", "get"); !strings.Contains(out, "100 rpm, 50000 tpm") {
		t.Fatalf("workspace get: %s", out)
	}
}
