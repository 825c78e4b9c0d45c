package toolpolicies

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestToolPoliciesFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdApply, []cmdtest.FlagCase[ApplyOptions]{
		{Name: "file", Args: []string{"-f", "tp.json", "--dry-run", "--prune", "--yes"}, Check: func(t *testing.T, o *ApplyOptions) {
			if o.File != "tp.json" || !o.DryRun || !o.Prune || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no file", WantErr: "-f FILE is required"},
	})
}

// A tool policy file is read as YAML or JSON with the server's rules;
// every problem is named by its line, all at once, before anything is
// sent.
func TestToolPolicyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		path := filepath.Join(dir, "tp.yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	json := write(`{"tool_policies":[{"name":"read","definition":{"target":{"kind":"workspace"},
		"rules":[{"match":{"servers":["github"]},"phase":"list","action":{"kind":"allow"}}]}}]}`)
	_, specs, err := readFile(json, nil)
	if err != nil || len(specs) != 1 || specs[0].Create.Definition.Rules[0].Phase != "list" || !specs[0].Doc.Enabled {
		t.Fatalf("JSON: %+v %v", specs, err)
	}
	yaml := write(`- name: read
  enabled: false
  definition:
    target: {kind: workspace}
    rules:
      - match: {servers: [github], tools: ["get_*"]}
        phase: list
        action: {kind: allow}
`)
	if _, specs, err = readFile(yaml, nil); err != nil || len(specs) != 1 || specs[0].Doc.Enabled || specs[0].Create.Definition.Rules[0].Match.Tools[0] != "get_*" {
		t.Fatalf("YAML: %+v %v", specs, err)
	}
	bad := write(`tool_policies:
  - name: read
    definition:
      target: {kind: workspace}
      rules:
        - match: {servers: [github], tools: ["[unclosed"]}
          phase: sometimes
          action: {kind: allow}
  - name: read
    colour: red
    definition: {target: {kind: workspace}, rules: []}
`)
	_, _, err = readFile(bad, nil)
	for _, want := range []string{
		bad + `:6: tool policy "read" (#1): definition.rules[0].match.tools[0]`,
		bad + `:7: tool policy "read" (#1): definition.rules[0].phase`,
		bad + `:9: tool policy "read" (#2): name: duplicate of tool policy #1`,
		bad + `:10: tool policy "read" (#2): colour`,
		bad + `:11: tool policy "read" (#2): definition.rules`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
	if _, _, err := readFile(write(`{"policies":[]}`), nil); err == nil || !strings.Contains(err.Error(), "tool_policies") {
		t.Fatalf("a file without tool_policies: %v", err)
	}
}
