package dataplanes

import (
	"bytes"
	"context"
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

// --platform-credentials is sent only when given, so an approval without
// it keeps the enrollment's setting.
func TestDataPlanesEnrollPlatformCredentialsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want *bool
	}{
		{[]string{"dp-1", "--org", "acme"}, nil},
		{[]string{"dp-1", "--org", "acme", "--platform-credentials"}, ptr(true)},
		{[]string{"dp-1", "--org", "acme", "--platform-credentials=false"}, ptr(false)},
	} {
		f, _, _ := cmdtest.Factory()
		var got *EnrollOptions
		cmd := NewCmdEnroll(f, func(_ context.Context, o *EnrollOptions) error { got = o; return nil })
		cmd.SetArgs(c.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == nil && got.PlatformCredentials != nil,
			c.want != nil && (got.PlatformCredentials == nil || *got.PlatformCredentials != *c.want):
			t.Errorf("%v: platform credentials %v, want %v", c.args, got.PlatformCredentials, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
