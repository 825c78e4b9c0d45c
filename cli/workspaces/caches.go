package workspaces

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/wire"
)

// cacheFlags set a workspace's response cache (docs/cache.md) and its
// prompt-cache injection (docs/promptcache.md) from gw workspaces update.
type cacheFlags struct {
	responseCache, noResponseCache bool
	ttl, maxEntry                  int
	inject, noPromptCache          bool
	minTokens                      int64
}

// The defaults a setting is turned on with when its flags leave a field
// out (the server requires every field).
const (
	defaultCacheTTL      = 300
	defaultCacheMaxEntry = 65536
	defaultMinPrefix     = 1024
)

func (f *cacheFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.responseCache, "response-cache", false, "answer repeated deterministic requests from the data plane's memory")
	fl.IntVar(&f.ttl, "response-cache-ttl", defaultCacheTTL, "seconds a cached answer is served again, 1 to 86400 (turns the response cache on)")
	fl.IntVar(&f.maxEntry, "response-cache-max-entry-bytes", defaultCacheMaxEntry, "largest answer kept, 1024 to 8388608 bytes (turns the response cache on)")
	fl.BoolVar(&f.noResponseCache, "no-response-cache", false, "turn the response cache off")
	fl.BoolVar(&f.inject, "prompt-cache-inject", false, "mark long stable prefixes (system prompt, tools) for the provider's prompt cache when the caller marked none")
	fl.Int64Var(&f.minTokens, "prompt-cache-min-tokens", defaultMinPrefix, "shortest prefix marked, 1024 to 1000000 tokens (turns injection on)")
	fl.BoolVar(&f.noPromptCache, "no-prompt-cache", false, "inject no prompt-cache marks")
}

// read returns the settings to send, nil for those no flag names. Turning
// one off sends it disabled, which the bundle leaves out as it does null.
func (f *cacheFlags) read(cmd *cobra.Command) (*wire.WorkspaceResponseCache, *wire.WorkspacePromptCache, error) {
	fl := cmd.Flags()
	if err := cmdutil.ExclusiveFlags(fl, "response-cache", "no-response-cache"); err != nil {
		return nil, nil, err
	}
	if err := cmdutil.ExclusiveFlags(fl, "prompt-cache-inject", "no-prompt-cache"); err != nil {
		return nil, nil, err
	}
	var rc *wire.WorkspaceResponseCache
	rcOn := f.responseCache || fl.Changed("response-cache-ttl") || fl.Changed("response-cache-max-entry-bytes")
	switch {
	case f.noResponseCache && (fl.Changed("response-cache-ttl") || fl.Changed("response-cache-max-entry-bytes")):
		return nil, nil, cmdutil.UsageError{Err: errors.New("--no-response-cache cannot be combined with --response-cache-ttl or --response-cache-max-entry-bytes")}
	case f.noResponseCache:
		rc = &wire.WorkspaceResponseCache{Enabled: false, TTLSeconds: f.ttl, MaxEntryBytes: f.maxEntry}
	case rcOn:
		rc = &wire.WorkspaceResponseCache{Enabled: true, TTLSeconds: f.ttl, MaxEntryBytes: f.maxEntry}
	}
	var pc *wire.WorkspacePromptCache
	switch {
	case f.noPromptCache && fl.Changed("prompt-cache-min-tokens"):
		return nil, nil, cmdutil.UsageError{Err: errors.New("--no-prompt-cache cannot be combined with --prompt-cache-min-tokens")}
	case f.noPromptCache:
		pc = &wire.WorkspacePromptCache{Inject: false, MinPrefixTokens: f.minTokens}
	case f.inject || fl.Changed("prompt-cache-min-tokens"):
		pc = &wire.WorkspacePromptCache{Inject: true, MinPrefixTokens: f.minTokens}
	}
	return rc, pc, nil
}

// cacheFields are the caches' request fields and the flags that set them.
var cacheFields = []cmdutil.FlagField{
	{Loc: "body.response_cache.ttl_seconds", Flag: "--response-cache-ttl"},
	{Loc: "body.response_cache.max_entry_bytes", Flag: "--response-cache-max-entry-bytes"},
	{Loc: "body.prompt_cache.min_prefix_tokens", Flag: "--prompt-cache-min-tokens"},
}
