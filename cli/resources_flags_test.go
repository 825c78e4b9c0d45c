package cli

import (
	"context"
	"strings"
	"testing"
)

const badOutput = "--output must be table, wide, json or yaml"

// TestResourceCommandsExitCodes runs bad invocations through the whole
// tree: every one is a usage error, exit 2, before any network.
func TestResourceCommandsExitCodes(t *testing.T) {
	t.Setenv("GW_SERVER", "http://127.0.0.1:1")
	t.Setenv("GW_TOKEN", "sk-cp-x")
	for _, args := range [][]string{
		{"orgs", "list", "-o", "xml"},
		{"orgs", "get", "-o", "xml"},
		{"workspaces", "members", "list", "-o", "xml"},
		{"keys", "list", "--scope", "galaxy"},
		{"credentials", "create", "--provider", "openai"},
		{"credentials", "create", "--provider", "openai", "--label", "x", "--secret", "leak"},
		{"catalog", "retire"},
		{"activity", "list", "--limit", "0", "--all", "--cursor", "x", "--scope", "org", "--output", "html"},
		{"models", "get"},
		{"invitations", "accept"},
	} {
		f, _, errOut := testFactory()
		f.ConfigPath = t.TempDir() + "/config.yaml"
		if code := Run(context.Background(), f, args); code != ExitUsage {
			t.Errorf("gw %s: exit %d, want %d (%s)", strings.Join(args, " "), code, ExitUsage, errOut)
		}
	}
}
