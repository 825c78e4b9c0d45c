package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gw-gateway/gw/server/store/storetest"
	"github.com/gw-gateway/gw/wire"
)

// gw mcp tools --key-name (issue 30): what a key of the workspace would
// see, worked out by the control plane without the key's secret, each
// tool with the rule that listed it, on both databases; it agrees with
// what the data plane answers the key itself.
func TestMCPToolsKeyName(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *bun.DB) {
		e := newResEnvOn(t, db)
		up := mcpRunUpstream(t)
		e.ok("mcp", "servers", "add", "up", "--url", up.URL)
		token := strings.TrimSpace(e.code(ExitOK, "", "inference-keys", "create", "--name", "ci-agent", "--expires-in", "90d").out)

		r := e.code(ExitOK, "", "mcp", "tools", "--key-name", "ci-agent")
		if r.out != "" || !strings.Contains(r.errOut, "2 tools hidden from this key") {
			t.Fatalf("deny by default: %q %q", r.out, r.errOut)
		}
		file := filepath.Join(t.TempDir(), "tp.yaml")
		if err := os.WriteFile(file, []byte(`- name: echo-only
  definition:
    target: {kind: workspace}
    rules:
      - {match: {servers: [up], tools: [echo]}, phase: list, action: {kind: allow}}
`), 0o600); err != nil {
			t.Fatal(err)
		}
		e.ok("tool-policies", "apply", "-f", file)

		rows := tableRows(e.ok("mcp", "tools", "--key-name", "ci-agent"))
		if len(rows) != 1 || rows[0][0] != "up__echo" || rows[0][1] != "echo-only#1" || rows[0][2] != "Echoes its text." {
			t.Fatalf("--key-name rows: %v", rows)
		}
		// The data plane shows the key itself the same tools.
		if got := tableRows(e.ok("mcp", "tools", "--key", token)); len(got) != 1 || got[0][0] != "up__echo" {
			t.Fatalf("the data plane's answer: %v", got)
		}
		view := decodeJSONOut[wire.KeyMCPTools](t, e.ok("mcp", "tools", "--key-name", "ci-agent", "--server", "up", "-o", "json"))
		if len(view.Servers) != 1 || len(view.Servers[0].Tools) != 2 || view.Servers[0].Tools[1].Name != "oops" ||
			view.Servers[0].Tools[1].Listed || view.Servers[0].Tools[1].Rule != "mcp_default" {
			t.Fatalf("json: %+v", view)
		}
		r = e.code(ExitError, "", "mcp", "tools", "--key-name", "nobody")
		mustContain(t, "unknown key", r.errOut, "nobody")
		r = e.code(ExitUsage, "", "mcp", "tools", "--key-name", "ci-agent", "--key", token)
		mustContain(t, "both", r.errOut, "drop --key")
	})
}
