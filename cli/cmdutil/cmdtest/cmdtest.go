// Package cmdtest holds what the command packages' tests share: a Factory
// over buffers, and flag cases run through a command's runF.
package cmdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
)

// Factory is a Factory whose streams are buffers: no terminal, empty
// input; it returns the buffers for stdout and stderr.
func Factory() (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	return &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}}, out, errOut
}

// BadOutput is how a command refuses an --output it cannot write.
const BadOutput = "--output must be table, wide, json or yaml"

// FlagCase is one invocation of a command through its runF: either the
// options it parsed are checked, or it fails with a usage error (exit 2)
// containing WantErr before runF is reached.
type FlagCase[O any] struct {
	Name    string
	Args    []string
	Env     map[string]string
	WantErr string
	Check   func(t *testing.T, o *O)
}

// RunFlagCases runs each case on a command built fresh by build.
func RunFlagCases[O any](t *testing.T, build func(*cmdutil.Factory, func(context.Context, *O) error) *cobra.Command, cases []FlagCase[O]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			for k, v := range c.Env {
				t.Setenv(k, v)
			}
			f, _, _ := Factory()
			var got *O
			cmd := build(f, func(_ context.Context, o *O) error { got = o; return nil })
			cmd.SetArgs(c.Args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if c.WantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.WantErr) {
					t.Fatalf("err = %v, want %q", err, c.WantErr)
				}
				var ue cmdutil.UsageError
				if !errors.As(err, &ue) && !cmdutil.IsCobraUsageError(err) {
					t.Fatalf("%v is not a usage error (exit 2)", err)
				}
				if got != nil {
					t.Fatal("runF ran despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("runF was not called")
			}
			if c.Check != nil {
				c.Check(t, got)
			}
		})
	}
}

// Run runs args on a root holding cmds and gw's global flags, as gw's
// own root runs them: the error said on stderr, and the exit code
// cmdutil.ExitCode gives it.
func Run(ctx context.Context, f *cmdutil.Factory, args []string, cmds ...*cobra.Command) int {
	root := &cobra.Command{Use: "gw", SilenceUsage: true, SilenceErrors: true}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	cmdutil.AddGlobalFlags(root)
	f.UseGlobalFlags(root)
	root.AddCommand(cmds...)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(f.IO.ErrOut, "error:", err)
		return cmdutil.ExitCode(err)
	}
	return cmdutil.ExitOK
}
