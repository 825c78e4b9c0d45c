package dataplane

import "github.com/gw-gateway/gw/server/providers"

// promptCache is the workspace's prompt-cache injection for an upstream
// call (issue 35, part 4; docs/promptcache.md), nil when the workspace
// injects nothing. The adapters decide where the breakpoints go, in each
// vendor's words (server/providers/promptcache.go).
func (x *exchange) promptCache() *providers.PromptCacheInjection {
	if x.key == nil || x.key.org == nil {
		return nil
	}
	set := x.key.org.promptCaches[x.key.workspace]
	if set == nil {
		return nil
	}
	return &providers.PromptCacheInjection{MinPrefixTokens: set.MinPrefixTokens}
}
