package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
		f, _, _ := testFactory()
		var got *DataPlanesEnrollOptions
		cmd := NewCmdDataPlanesEnroll(f, func(_ context.Context, o *DataPlanesEnrollOptions) error { got = o; return nil })
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

// A data plane that never asked: without --wait gw suggests it; to one
// who passed --wait it does not, and names the likely causes instead
// (issue 26, row 12). A --wait shorter than one retry asks once.
func TestDataPlanesEnrollNeverAsked(t *testing.T) {
	e := newResEnv(t)
	r := e.code(ExitError, "", "data-planes", "enroll", "dp-nowhere", "--org", "default")
	mustContain(t, "without --wait", r.errOut, `data plane "dp-nowhere" has not asked to be enrolled`, "or pass --wait 2m")
	r = e.code(ExitError, "", "data-planes", "enroll", "dp-nowhere", "--org", "default", "--wait", "1s")
	mustContain(t, "with --wait", r.errOut, `data plane "dp-nowhere" did not ask to be enrolled within --wait 1s: is it running, with --data-plane-id dp-nowhere`)
	if strings.Contains(r.errOut, "pass --wait") {
		t.Fatalf("--wait suggested to one who passed it: %s", r.errOut)
	}
}
