-- Batches (issue 34, part 1): a model's own batch prices as JSON (NULL:
-- the provider kind's published batch discount applies, else the normal
-- prices), and the batch whose line a usage event is (NULL: a synchronous
-- request, and events of older data planes).
ALTER TABLE catalog_models ADD COLUMN batch_pricing TEXT;
ALTER TABLE usage_events ADD COLUMN batch_id TEXT;
