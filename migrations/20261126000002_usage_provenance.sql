-- Metering that never records less than was delivered: who counted an
-- event's tokens (the upstream, or gw when the upstream did not), the
-- reasoning part of its output and the one-hour part of its cache writes,
-- and its provenance (prices, bundle, policies, budgets) as JSON.
ALTER TABLE usage_events ADD COLUMN usage_source TEXT NOT NULL DEFAULT 'upstream';
ALTER TABLE usage_events ADD COLUMN reasoning_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_events ADD COLUMN cache_write_1h_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_events ADD COLUMN provenance TEXT;

-- gw usage explain finds a request's event by the id it was answered with.
CREATE INDEX usage_events_request ON usage_events (org_id, request_id);
