package admin

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestAdminCreateKeyFlags(t *testing.T) {
	f, _, _ := cmdtest.Factory()
	var got *CreateKeyOptions
	cmd := NewCmdCreateKey(f, func(_ context.Context, o *CreateKeyOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--label", "recovery", "--permissions", "organizations.read, audit.read"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Label != "recovery" || strings.Join(got.Permissions, ",") != "organizations.read,audit.read" {
		t.Fatalf("%+v", got)
	}
	cmd = NewCmdCreateKey(f, func(context.Context, *CreateKeyOptions) error { return nil })
	cmd.SetArgs([]string{"--label", "x", "--permissions", "root.all"})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "unknown permission") {
		t.Fatalf("unknown permission: %v", err)
	}
}
