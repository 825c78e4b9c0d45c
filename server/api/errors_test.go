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
