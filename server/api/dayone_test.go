package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/wire"
)

// A key's 403 says whether it is out of scope, and where it reaches, or
// lacks a permission (issue 22, rows 2 and 10).
func TestRefusalsNameTheirCause(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		orgKey := e.key("/api/v1/organizations/default", e.ownerKey, []string{"workspaces.read", "data-planes.read"}, nil)
		wsKey := e.key("/api/v1/organizations/default/workspaces/default", e.ownerKey, []string{"workspaces.read"}, nil)
		for _, c := range []struct {
			name, path, cred, want string
		}{
			{"org key at instance scope", "/api/v1/instance/data-planes", orgKey.Token,
				"out of scope: this management key is scoped to organization default; this endpoint needs an instance-scope key"},
			{"org key, another organization", "/api/v1/organizations/nosuch/workspaces", orgKey.Token,
				`out of scope: this management key is scoped to organization default; it does not reach organization "nosuch"`},
			{"workspace key, organization route", "/api/v1/organizations/default/members", wsKey.Token,
				"scoped to workspace default of organization default; this endpoint needs an organization-scope key"},
			{"workspace key, another workspace", "/api/v1/organizations/default/workspaces/other", wsKey.Token,
				`it does not reach workspace "other"`},
			{"missing permission", "/api/v1/organizations/default/members", orgKey.Token, "missing permission: members.read"},
		} {
			code, body := e.do("GET", c.path, c.cred, nil)
			var detail wire.ErrorDetail
			_ = json.Unmarshal(body, &detail)
			if code != 403 || !strings.Contains(detail.Detail, c.want) {
				t.Errorf("%s: %d %s, want 403 with %q", c.name, code, body, c.want)
			}
		}
	})
}

// A workspace-scoped key reads its workspace's usage report at the
// workspace's URL; it cannot name another workspace there, nor read
// another workspace's report (issue 22, row 3).
func TestWorkspaceUsageReport(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		other := decodeData[wire.Workspace](t, e.must("POST", "/api/v1/organizations/default/workspaces", e.ownerKey, map[string]any{"name": "Other"}))
		wsKey := e.key("/api/v1/organizations/default/workspaces/default", e.ownerKey, []string{"usage.read"}, nil)
		base := "/api/v1/organizations/default/workspaces/default/reports/usage"
		r := decodeData[wire.UsageReport](t, e.must("GET", base+"?period=7d", wsKey.Token, nil))
		if r.Totals.CostUSD == "" {
			t.Fatalf("report: %+v", r)
		}
		b := decodeData[wire.UsageBreakdown](t, e.must("GET", base+"/breakdown?by=model", wsKey.Token, nil))
		if b.By != "model" {
			t.Fatalf("breakdown: %+v", b)
		}
		if code, body := e.do("GET", base+"?workspace_id="+other.ID.String(), wsKey.Token, nil); code != 422 || !strings.Contains(string(body), "workspace_id") {
			t.Fatalf("another workspace's id in the query: %d %s", code, body)
		}
		if code, _ := e.do("GET", "/api/v1/organizations/default/workspaces/other/reports/usage", wsKey.Token, nil); code != 403 {
			t.Fatalf("another workspace's report: %d", code)
		}
		// The organization's report stays out of the workspace key's reach.
		if code, _ := e.do("GET", "/api/v1/organizations/default/reports/usage", wsKey.Token, nil); code != 403 {
			t.Fatalf("the organization's report: %d", code)
		}
	})
}
