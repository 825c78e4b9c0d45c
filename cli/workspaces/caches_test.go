package workspaces

import (
	"testing"

	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
	"github.com/gw-gateway/gw/wire"
)

// TestWorkspaceCacheFlags: gw workspaces update sets the response cache
// (issue 35, part 5) and the prompt-cache injection (part 4), with the
// defaults a field left out is sent with, and turns either off.
func TestWorkspaceCacheFlags(t *testing.T) {
	rc := func(o *UpdateOptions) wire.WorkspaceResponseCache {
		if o.ResponseCache == nil {
			return wire.WorkspaceResponseCache{TTLSeconds: -1}
		}
		return *o.ResponseCache
	}
	pc := func(o *UpdateOptions) wire.WorkspacePromptCache {
		if o.PromptCache == nil {
			return wire.WorkspacePromptCache{MinPrefixTokens: -1}
		}
		return *o.PromptCache
	}
	cmdtest.RunFlagCases(t, NewCmdUpdate, []cmdtest.FlagCase[UpdateOptions]{
		{Name: "response cache on", Args: []string{"search", "--response-cache"}, Check: func(t *testing.T, o *UpdateOptions) {
			if rc(o) != (wire.WorkspaceResponseCache{Enabled: true, TTLSeconds: 300, MaxEntryBytes: 65536}) || o.PromptCache != nil || o.Name != nil {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "ttl turns it on", Args: []string{"--response-cache-ttl", "600", "--response-cache-max-entry-bytes", "4096"}, Check: func(t *testing.T, o *UpdateOptions) {
			if rc(o) != (wire.WorkspaceResponseCache{Enabled: true, TTLSeconds: 600, MaxEntryBytes: 4096}) {
				t.Errorf("%+v", rc(o))
			}
		}},
		{Name: "response cache off", Args: []string{"--no-response-cache"}, Check: func(t *testing.T, o *UpdateOptions) {
			if r := rc(o); r.Enabled || r.TTLSeconds != 300 {
				t.Errorf("%+v", r)
			}
		}},
		{Name: "injection on", Args: []string{"--prompt-cache-inject"}, Check: func(t *testing.T, o *UpdateOptions) {
			if pc(o) != (wire.WorkspacePromptCache{Inject: true, MinPrefixTokens: 1024}) || o.ResponseCache != nil {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "min tokens turn it on", Args: []string{"--prompt-cache-min-tokens", "4096", "--name", "S"}, Check: func(t *testing.T, o *UpdateOptions) {
			if pc(o) != (wire.WorkspacePromptCache{Inject: true, MinPrefixTokens: 4096}) || o.Name == nil {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "injection off", Args: []string{"--no-prompt-cache"}, Check: func(t *testing.T, o *UpdateOptions) {
			if p := pc(o); p.Inject || p.MinPrefixTokens != 1024 {
				t.Errorf("%+v", p)
			}
		}},
		{Name: "both response", Args: []string{"--response-cache", "--no-response-cache"}, WantErr: "--response-cache and --no-response-cache cannot be used together"},
		{Name: "off with a ttl", Args: []string{"--no-response-cache", "--response-cache-ttl", "5"}, WantErr: "--no-response-cache cannot be combined with --response-cache-ttl"},
		{Name: "both prompt", Args: []string{"--prompt-cache-inject", "--no-prompt-cache"}, WantErr: "--prompt-cache-inject and --no-prompt-cache cannot be used together"},
	})
}
