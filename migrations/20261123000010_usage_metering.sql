-- Metering without holes: every usage event says which request it is
-- (request_id, the answer's X-Request-Id, and endpoint), why a request was
-- denied or failed (reason, a code of gw's), and how it was served: the
-- model asked for and the upstream attempts made (attempts, a JSON array
-- of {model, provider, failure, latency_ms}). Events stored before this
-- migration carry no attempt chain; the model they name is the best
-- account of the one asked for.
ALTER TABLE usage_events ADD COLUMN request_id TEXT;
ALTER TABLE usage_events ADD COLUMN endpoint TEXT;
ALTER TABLE usage_events ADD COLUMN reason TEXT;
ALTER TABLE usage_events ADD COLUMN requested_model TEXT;
ALTER TABLE usage_events ADD COLUMN attempts TEXT;
UPDATE usage_events SET requested_model = model;
-- The events list filters by status, key, model and provider within an
-- organization or workspace, newest first; the page indexes serve the
-- order, the filters are applied to what they return.
