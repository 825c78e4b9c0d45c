package toolpolicies

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestToolPoliciesFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdApply, []cmdtest.FlagCase[ApplyOptions]{
		{Name: "file", Args: []string{"-f", "tp.json"}, Check: func(t *testing.T, o *ApplyOptions) {
			if o.File != "tp.json" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "no file", WantErr: "--file"},
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "tp.json")
	if err := os.WriteFile(path, []byte(`{"tool_policies":[{"name":"read","definition":{"target":{"kind":"workspace"},
		"rules":[{"match":{"servers":["github"]},"phase":"list","action":{"kind":"allow"}}]}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := readFile(path)
	if err != nil || len(f.ToolPolicies) != 1 || f.ToolPolicies[0].Definition.Rules[0].Phase != "list" {
		t.Fatalf("%+v %v", f, err)
	}
	if err := os.WriteFile(path, []byte(`{"policies":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readFile(path); err == nil {
		t.Fatal("a file without tool_policies is refused")
	}
}
