-- The 2026 price classes: a model's service tiers (priority, flex) as JSON
-- (NULL for none), and the service tier each usage event was billed in
-- (NULL: the answer and the request named none, and events of older data
-- planes).
ALTER TABLE catalog_models ADD COLUMN service_tiers TEXT;
ALTER TABLE usage_events ADD COLUMN service_tier TEXT;
