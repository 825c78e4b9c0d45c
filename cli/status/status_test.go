package status

import (
	"strings"
	"testing"
	"time"

	"github.com/gw-gateway/gw/wire"
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

// gw status shows one line per workspace whose archive bucket failed its
// last check, as a warning that does not fail the status; archives that
// answered make one ok line; disabled or unchecked ones none.
func TestStatusArchives(t *testing.T) {
	archive := func(bucket string, enabled bool) *wire.WorkspaceArchive {
		return &wire.WorkspaceArchive{Enabled: enabled, Destination: wire.ArchiveDestination{Bucket: bucket}}
	}
	at := time.Now().Add(-time.Hour)
	wss := []wire.Workspace{
		{Slug: "search", Archive: archive("acme-search", true), ArchiveCheck: &wire.ArchiveCheck{OK: false, Error: "dial tcp: connection refused", CheckedAt: at, By: "sweep"}},
		{Slug: "ads", Archive: archive("acme-ads", true), ArchiveCheck: &wire.ArchiveCheck{OK: true, CheckedAt: at, By: "save"}},
		{Slug: "none"},
		{Slug: "off", Archive: archive("acme-off", false)},
		{Slug: "new", Archive: archive("acme-new", true), ArchiveCheck: &wire.ArchiveCheck{OK: false, Error: "archive bucket acme-new could not be reached (403)", CheckedAt: at, By: "save"}},
	}
	st := &Status{Healthy: true}
	st.archives(wss)
	if !st.Healthy {
		t.Error("an unreachable archive failed gw status; it is a warning")
	}
	if len(st.Checks) != 2 {
		t.Fatalf("checks: %+v", st.Checks)
	}
	for i, want := range []struct{ name, detail string }{
		{"archive search", "bucket acme-search could not be reached at the hourly sweep (1h0m0s ago): dial tcp: connection refused"},
		{"archive new", "bucket acme-new could not be reached when the setting was saved"},
	} {
		c := st.Checks[i]
		if c.Name != want.name || c.State != "warn" || !strings.Contains(c.Detail, want.detail) {
			t.Errorf("check %d: %+v, want %s: %s", i, c, want.name, want.detail)
		}
	}
	st = &Status{Healthy: true}
	st.archives(wss[1:4])
	if len(st.Checks) != 1 || st.Checks[0].State != "ok" || !strings.Contains(st.Checks[0].Detail, "1 workspace archives") {
		t.Errorf("all reachable: %+v", st.Checks)
	}
	st = &Status{Healthy: true}
	if st.archives(wss[2:4]); len(st.Checks) != 0 {
		t.Errorf("no archive checked: %+v", st.Checks)
	}
}
