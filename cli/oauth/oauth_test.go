package oauth

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestOAuthClientsAddFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdClientsAdd, []cmdtest.FlagCase[AddOptions]{
		{Name: "public", Args: []string{"cli", "--redirect-uri", "http://127.0.0.1:8123/cb", "--redirect-uri", "https://app.example.com/cb"},
			Check: func(t *testing.T, o *AddOptions) {
				if o.Name != "cli" || len(o.RedirectURIs) != 2 || o.RedirectURIs[1] != "https://app.example.com/cb" || o.Confidential {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "confidential", Args: []string{"svc", "--redirect-uri", "https://svc.example.com/cb", "--confidential"},
			Check: func(t *testing.T, o *AddOptions) {
				if !o.Confidential {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "no redirect uri", Args: []string{"cli"}, WantErr: "--redirect-uri"},
		{Name: "no name", Args: []string{"--redirect-uri", "https://x.example.com/cb"}, WantErr: "accepts 1 arg"},
	})
}
