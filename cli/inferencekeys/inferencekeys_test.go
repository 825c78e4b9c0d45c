package inferencekeys

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestInferenceKeysFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "bad output", Args: []string{"-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdGet, []cmdtest.FlagCase[GetOptions]{
		{Name: "id", Args: []string{"k1"}, Check: func(t *testing.T, o *GetOptions) {
			if o.ID != "k1" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
	cmdtest.RunFlagCases(t, NewCmdCreate, []cmdtest.FlagCase[CreateOptions]{
		{Name: "owner and lifetime", Args: []string{"--name", "app", "--user", "bob@example.com", "--expires-in", "12h"},
			Check: func(t *testing.T, o *CreateOptions) {
				if o.Name != "app" || o.User != "bob@example.com" || o.ExpiresAt == nil {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "no name", WantErr: "--name"},
		{Name: "zero lifetime", Args: []string{"--name", "x", "--expires-in", "0d"}, WantErr: "positive"},
	})
	cmdtest.RunFlagCases(t, NewCmdRevoke, []cmdtest.FlagCase[RevokeOptions]{
		{Name: "yes", Args: []string{"k1", "--yes"}, Check: func(t *testing.T, o *RevokeOptions) {
			if !o.Yes {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
}

func TestRateLimitFlags(t *testing.T) {
	n := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	cmdtest.RunFlagCases(t, NewCmdCreate, []cmdtest.FlagCase[CreateOptions]{
		{Name: "limits", Args: []string{"--name", "app", "--rpm", "60", "--tpm", "100000"}, Check: func(t *testing.T, o *CreateOptions) {
			if n(o.RateLimits.RPM) != 60 || n(o.RateLimits.TPM) != 100000 {
				t.Errorf("%+v", o.RateLimits)
			}
		}},
		{Name: "none", Args: []string{"--name", "app"}, Check: func(t *testing.T, o *CreateOptions) {
			if !o.RateLimits.Empty() {
				t.Errorf("%+v", o.RateLimits)
			}
		}},
		{Name: "negative", Args: []string{"--name", "app", "--rpm", "-1"}, WantErr: "--rpm must be a positive number"},
	})
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "tpm only", Args: []string{"k1", "--tpm", "5000"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.ID != "k1" || o.Name != nil || o.RateLimits.RPM != nil || n(o.RateLimits.TPM) != 5000 {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "clear one", Args: []string{"k1", "--rpm", "0"}, Check: func(t *testing.T, o *UpdateOptions) {
			if n(o.RateLimits.RPM) != 0 || o.RateLimits.TPM != nil {
				t.Errorf("%+v", o.RateLimits)
			}
		}},
		{Name: "clear both", Args: []string{"k1", "--no-rate-limits"}, Check: func(t *testing.T, o *UpdateOptions) {
			if n(o.RateLimits.RPM) != 0 || n(o.RateLimits.TPM) != 0 {
				t.Errorf("%+v", o.RateLimits)
			}
		}},
		{Name: "rename", Args: []string{"k1", "--name", "ci"}, Check: func(t *testing.T, o *UpdateOptions) {
			if o.Name == nil || *o.Name != "ci" || !o.RateLimits.Empty() {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "conflict", Args: []string{"k1", "--no-rate-limits", "--rpm", "5"}, WantErr: "cannot be combined"},
		{Name: "nothing", Args: []string{"k1"}, WantErr: "nothing to change"},
		{Name: "missing", WantErr: "accepts 1 arg"},
	})
}
