package cli

import (
	"strings"
	"testing"
)

func TestAliasesCommands(t *testing.T) {
	e := newResEnv(t)
	mustContain(t, "set", e.ok("aliases", "set", "claude-opus-4-8[1m]", "openai/gpt-4o-mini"), "created alias claude-opus-4-8[1m]")
	mustContain(t, "set again", e.ok("aliases", "set", "claude-opus-4-8[1m]", "openai/gpt-4o=3", "openai/gpt-4o-mini"), "updated alias", "openai/gpt-4o=3")
	mustContain(t, "list", e.ok("aliases", "list"), "claude-opus-4-8[1m]", "openai/gpt-4o=3, openai/gpt-4o-mini=1")
	file := `aliases:
  - name: claude-opus-4-8[1m]
    targets:
      - {model: openai/gpt-4o, weight: 3}
      - {model: openai/gpt-4o-mini}
  - name: gpt-5.1-codex
    targets:
      - model: openai/gpt-4o-mini
`
	mustContain(t, "apply", e.code(ExitOK, file, "aliases", "apply", "-f", "-").out, "created alias gpt-5.1-codex")
	mustContain(t, "apply again", e.code(ExitOK, file, "aliases", "apply", "-f", "-").out, "no changes")
	mustContain(t, "workspace apply", e.code(ExitOK, file, "aliases", "apply", "-f", "-", "--scope", "workspace").out, "created alias claude-opus-4-8[1m]")
	e.code(ExitUsage, "aliases: [{name: x}]", "aliases", "apply", "-f", "-")
	mustContain(t, "delete", e.ok("aliases", "delete", "gpt-5.1-codex", "--yes"), "deleted alias gpt-5.1-codex")
	mustContain(t, "prune", e.code(ExitOK, "aliases: []", "aliases", "apply", "-f", "-", "--prune", "--yes").out, "deleted alias claude-opus-4-8[1m]")
	if r := e.gw("", "aliases", "set", "gpt-5", "openai/nope"); r.code == ExitOK {
		t.Fatalf("a target outside the catalog: %+v", r)
	}
}

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
