-- The response cache's saving (issue 35, part 5) summed in the rollups and
-- their queue, as the cost is. Events already rolled up count no saving
-- (the response cache is a day old; its hits keep their saving on the
-- event, usage_events.cache_saving_nano_usd).
ALTER TABLE usage_rollups ADD COLUMN cache_saving_nano_usd BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_rollup_queue ADD COLUMN cache_saving_nano_usd BIGINT NOT NULL DEFAULT 0;
