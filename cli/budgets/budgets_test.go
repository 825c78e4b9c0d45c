package budgets

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestBudgetsFlags(t *testing.T) {
	for _, args := range [][]string{{}, {"-o", "json"}, {"list", "--output", "yaml"}} {
		f, _, _ := cmdtest.Factory()
		var got *ListOptions
		cmd := NewCmd(f, func(_ context.Context, o *ListOptions) error { got = o; return nil })
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		if err := cmd.Execute(); err != nil || got == nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	f, _, _ := cmdtest.Factory()
	cmd := NewCmd(f, func(context.Context, *ListOptions) error { return nil })
	cmd.SetArgs([]string{"-o", "csv"})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--output must be") {
		t.Fatalf("-o csv: %v", err)
	}
}
