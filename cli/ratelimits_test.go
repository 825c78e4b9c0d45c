package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

func TestRateLimitFlags(t *testing.T) {
	n := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	runFlagCases(t, NewCmdInferenceKeysCreate, []flagCase[InferenceKeysCreateOptions]{
		{name: "limits", args: []string{"--name", "app", "--rpm", "60", "--tpm", "100000"}, check: func(t *testing.T, o *InferenceKeysCreateOptions) {
			if n(o.RateLimits.RPM) != 60 || n(o.RateLimits.TPM) != 100000 {
				t.Errorf("%+v", o.RateLimits)
			}
		}},
		{name: "none", args: []string{"--name", "app"}, check: func(t *testing.T, o *InferenceKeysCreateOptions) {
			if !o.RateLimits.Empty() {
				t.Errorf("%+v", o.RateLimits)
			}
		}},
		{name: "negative", args: []string{"--name", "app", "--rpm", "-1"}, wantErr: "--rpm must be a positive number"},
	})
	runFlagCases(t, NewCmdInferenceKeysUpdate, []flagCase[InferenceKeysUpdateOptions]{
		{name: "tpm only", args: []string{"k1", "--tpm", "5000"}, check: func(t *testing.T, o *InferenceKeysUpdateOptions) {
			if o.ID != "k1" || o.Name != nil || o.RateLimits.RPM != nil || n(o.RateLimits.TPM) != 5000 {
				t.Errorf("%+v", o)
			}
		}},
		{name: "clear one", args: []string{"k1", "--rpm", "0"}, check: func(t *testing.T, o *InferenceKeysUpdateOptions) {
			if n(o.RateLimits.RPM) != 0 || o.RateLimits.TPM != nil {
				t.Errorf("%+v", o.RateLimits)
			}
		}},
		{name: "clear both", args: []string{"k1", "--no-rate-limits"}, check: func(t *testing.T, o *InferenceKeysUpdateOptions) {
			if n(o.RateLimits.RPM) != 0 || n(o.RateLimits.TPM) != 0 {
				t.Errorf("%+v", o.RateLimits)
			}
		}},
		{name: "rename", args: []string{"k1", "--name", "ci"}, check: func(t *testing.T, o *InferenceKeysUpdateOptions) {
			if o.Name == nil || *o.Name != "ci" || !o.RateLimits.Empty() {
				t.Errorf("%+v", o)
			}
		}},
		{name: "conflict", args: []string{"k1", "--no-rate-limits", "--rpm", "5"}, wantErr: "cannot be combined"},
		{name: "nothing", args: []string{"k1"}, wantErr: "nothing to change"},
		{name: "missing", wantErr: "accepts 1 arg"},
	})
}

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
