package wire

// WorkspaceResponseCache is a workspace's response cache (issue 35,
// docs/cache.md): deterministic requests (temperature 0, or the header
// x-gw-cache-allow: true) answered again from the data plane's memory for
// ttl_seconds, per workspace and policy decision, never across them.
type WorkspaceResponseCache struct {
	Enabled bool `json:"enabled"`
	// TTLSeconds is how long an answer is served again (1 to 86400).
	TTLSeconds int `json:"ttl_seconds" jsonschema:"minimum=1,maximum=86400"`
	// MaxEntryBytes is the largest answer kept (1024 to 8388608).
	MaxEntryBytes int `json:"max_entry_bytes" jsonschema:"minimum=1024,maximum=8388608"`
}
