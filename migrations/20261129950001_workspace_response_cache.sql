-- The response cache (issue 35): a workspace's setting as JSON text
-- ({enabled, ttl_seconds, max_entry_bytes}); NULL caches nothing. A usage
-- event answered from the cache records what the upstream call would have
-- cost (cache_saving_usd), its own cost being 0.
ALTER TABLE workspaces ADD COLUMN response_cache TEXT;
ALTER TABLE usage_events ADD COLUMN cache_saving_nano_usd BIGINT NOT NULL DEFAULT 0;
