package policies

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
	"github.com/gw-gateway/gw/server/policy"
	"github.com/spf13/cobra"
)

func TestPoliciesFlags(t *testing.T) {
	type result struct {
		apply   *ApplyOptions
		explain *ExplainOptions
		list    *ListOptions
		get     *GetOptions
		del     *DeleteOptions
	}
	cases := []struct {
		name    string
		cmd     string
		args    []string
		wantErr string
		check   func(t *testing.T, r result)
	}{
		{name: "apply defaults", cmd: "apply", args: []string{"-f", "p.yaml"}, check: func(t *testing.T, r result) {
			if o := r.apply; o.File != "p.yaml" || o.Prune || o.DryRun || o.Yes || o.DiffOnly {
				t.Errorf("%+v", o)
			}
		}},
		{name: "apply all flags", cmd: "apply", args: []string{"--file", "-", "--prune", "--dry-run", "-y"}, check: func(t *testing.T, r result) {
			if o := r.apply; o.File != "-" || !o.Prune || !o.DryRun || !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{name: "apply needs a file", cmd: "apply", wantErr: "-f FILE is required"},
		{name: "apply takes no args", cmd: "apply", args: []string{"-f", "x", "extra"}, wantErr: "unknown command"},
		{name: "diff", cmd: "diff", args: []string{"-f", "p.json", "--prune"}, check: func(t *testing.T, r result) {
			if o := r.apply; o.File != "p.json" || !o.Prune || !o.DiffOnly {
				t.Errorf("%+v", o)
			}
		}},
		{name: "diff has no dry-run", cmd: "diff", args: []string{"-f", "p", "--dry-run"}, wantErr: "unknown flag"},
		{name: "explain", cmd: "explain", args: []string{"--key", "k1", "--model", "openai/gpt-4o", "--stream",
			"--capability", "tools", "--capability", "reasoning,tools", "--phase", "discovery", "-o", "json"},
			check: func(t *testing.T, r result) {
				o := r.explain
				if o.Key != "k1" || o.Model != "openai/gpt-4o" || !o.Stream || o.Phase != policy.PhaseDiscovery || o.Output.Format != "json" {
					t.Errorf("%+v", o)
				}
				if len(o.Capabilities) != 2 || o.Capabilities[0] != policy.CapabilityTools || o.Capabilities[1] != policy.CapabilityReasoning {
					t.Errorf("capabilities %v", o.Capabilities)
				}
			}},
		{name: "explain defaults", cmd: "explain", args: []string{"--key", "k", "--model", "m"}, check: func(t *testing.T, r result) {
			if o := r.explain; o.Phase != policy.PhaseInference || o.Stream || len(o.Capabilities) != 0 || o.Output.Format != cmdutil.OutputTable {
				t.Errorf("%+v", o)
			}
		}},
		{name: "explain needs key and model", cmd: "explain", args: []string{"--model", "m"}, wantErr: "--key and --model are required"},
		{name: "explain bad capability", cmd: "explain", args: []string{"--key", "k", "--model", "m", "--capability", "streaming"}, wantErr: "--capability must be"},
		{name: "explain bad phase", cmd: "explain", args: []string{"--key", "k", "--model", "m", "--phase", "later"}, wantErr: "--phase must be"},
		{name: "list", cmd: "list", args: []string{"-o", "yaml"}, check: func(t *testing.T, r result) {
			if r.list.Output.Format != "yaml" {
				t.Errorf("%+v", r.list)
			}
		}},
		{name: "list bad output", cmd: "list", args: []string{"-o", "xml"}, wantErr: "--output must be"},
		{name: "get", cmd: "get", args: []string{"cap-costs", "--output", "json"}, check: func(t *testing.T, r result) {
			if r.get.Ref != "cap-costs" || r.get.Output.Format != "json" {
				t.Errorf("%+v", r.get)
			}
		}},
		{name: "get needs a name", cmd: "get", wantErr: "accepts 1 arg"},
		{name: "delete", cmd: "delete", args: []string{"old", "--yes"}, check: func(t *testing.T, r result) {
			if r.del.Ref != "old" || !r.del.Yes {
				t.Errorf("%+v", r.del)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, _, _ := cmdtest.Factory()
			var r result
			var cmd *cobra.Command
			switch c.cmd {
			case "apply":
				cmd = NewCmdApply(f, func(_ context.Context, o *ApplyOptions) error { r.apply = o; return nil })
			case "diff":
				cmd = NewCmdDiff(f, func(_ context.Context, o *ApplyOptions) error { r.apply = o; return nil })
			case "explain":
				cmd = NewCmdExplain(f, func(_ context.Context, o *ExplainOptions) error { r.explain = o; return nil })
			case "list":
				cmd = NewCmdList(f, func(_ context.Context, o *ListOptions) error { r.list = o; return nil })
			case "get":
				cmd = NewCmdGet(f, func(_ context.Context, o *GetOptions) error { r.get = o; return nil })
			case "delete":
				cmd = NewCmdDelete(f, func(_ context.Context, o *DeleteOptions) error { r.del = o; return nil })
			}
			cmd.SetArgs(c.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, r)
		})
	}
}

func TestPolicyFileFormats(t *testing.T) {
	def := `{"target":{"kind":"workspace"},"rules":[{"match":{"kind":"all_requests"},"action":{"kind":"budget","amount_usd":"100","period":"month","aggregation":"shared"}}]}`
	cases := []struct {
		name, file, content string
		enabled             bool
	}{
		{"json object", "p.json", `{"name":"b","enabled":false,"definition":` + def + `}`, false},
		{"json list", "p.json", `[{"name":"b","definition":` + def + `}]`, true},
		{"yaml flow", "p.yaml", `{name: b, definition: ` + def + `}`, true},
		{"yaml block, odd numbers", "p", "name: b\nenabled: true\ndefinition:\n  target: {kind: workspace}\n  rules:\n" +
			"    - match: {kind: all_requests}\n      action: {kind: budget, amount_usd: \"100\", period: month, aggregation: shared}\n", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			specs, err := parsePolicyFile(c.file, []byte(c.content))
			if err != nil {
				t.Fatal(err)
			}
			if len(specs) != 1 || specs[0].Name != "b" || specs[0].Enabled != c.enabled || specs[0].Index != 1 {
				t.Fatalf("%+v", specs)
			}
			got, _ := canonicalDefinition(specs[0].Definition)
			if got != def {
				t.Fatalf("definition %s", got)
			}
		})
	}
	// YAML integers in any spelling arrive as the JSON number they mean.
	specs, err := parsePolicyFile("p.yaml", []byte("name: f\ndefinition:\n  target: {kind: workspace}\n  rules:\n"+
		"    - match: {kind: all_requests}\n      action: {kind: fallback, models: [a], on: [timeout], max_attempts: 0x3, timeout_ms: 1_000}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := specs[0].Definition.Rules[0].Action; a.MaxAttempts != 3 || a.TimeoutMS != 1000 {
		t.Fatalf("%+v", a)
	}
	if _, err := parsePolicyFile("p.json", []byte(`{"name": "x",}`)); err == nil || !strings.Contains(err.Error(), "p.json: invalid JSON at byte") {
		t.Fatalf("bad JSON: %v", err)
	}
	// An amount the server would refuse (issue 26 row 1) is found in the
	// file, at its line, before anything is sent.
	_, err = parsePolicyFile("p.yaml", []byte("name: b\ndefinition:\n  target: {kind: workspace}\n  rules:\n"+
		"    - match: {kind: all_requests}\n      action: {kind: budget, amount_usd: \"0.0000000001\", period: day, aggregation: shared}\n"))
	if err == nil || !strings.Contains(err.Error(), "amount_usd") || !strings.Contains(err.Error(), "no more than 9 decimal places") {
		t.Fatalf("an amount finer than a nano-dollar: %v", err)
	}
}
