package models

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestModelsFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdList, []cmdtest.FlagCase[ListOptions]{
		{Name: "key flag", Args: []string{"--key", "sk-gw-abc"}, Check: func(t *testing.T, o *ListOptions) {
			if o.Target.Key != "sk-gw-abc" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "key from env", Env: map[string]string{"GW_INFERENCE_KEY": "sk-gw-env", "GW_DATA_PLANE_URL": "http://dp:8080"},
			Check: func(t *testing.T, o *ListOptions) {
				if o.Target.Key != "sk-gw-env" || o.Target.DataPlaneURL != "http://dp:8080" {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "flag beats env", Args: []string{"--key", "sk-gw-flag"}, Env: map[string]string{"GW_INFERENCE_KEY": "sk-gw-env"},
			Check: func(t *testing.T, o *ListOptions) {
				if o.Target.Key != "sk-gw-flag" {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "no key", Env: map[string]string{"GW_INFERENCE_KEY": ""}, WantErr: "no inference key"},
		{Name: "bad output", Args: []string{"--key", "k", "-o", "xml"}, WantErr: cmdtest.BadOutput},
	})
	cmdtest.RunFlagCases(t, NewCmdGet, []cmdtest.FlagCase[GetOptions]{
		{Name: "slashes", Args: []string{"openai/gpt-4o-mini", "--key", "sk-gw-abc"}, Check: func(t *testing.T, o *GetOptions) {
			if o.ID != "openai/gpt-4o-mini" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "missing", Args: []string{"--key", "k"}, WantErr: "accepts 1 arg"},
	})
}
