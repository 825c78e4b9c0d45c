package wire

// WorkspacePromptCache is a workspace's prompt-cache setting (issue 35,
// docs/promptcache.md): with inject, gw marks the end of a request's tool
// list and system prompt as a prefix for the upstream to cache (Anthropic's
// cache_control, Bedrock's cachePoint) when the caller marked none and that
// prefix is at least min_prefix_tokens long.
type WorkspacePromptCache struct {
	Inject bool `json:"inject"`
	// MinPrefixTokens is the shortest prefix marked (1024 to 1000000;
	// providers cache nothing shorter than 1024 tokens).
	MinPrefixTokens int64 `json:"min_prefix_tokens" jsonschema:"minimum=1024,maximum=1000000"`
}
