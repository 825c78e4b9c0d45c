-- The response cache's saving in the tag pair rollups, apart from the
-- rollups' own migration, which the rollup back-fill test runs again.
ALTER TABLE usage_tag_rollups ADD COLUMN cache_saving_nano_usd BIGINT NOT NULL DEFAULT 0;
