-- Cost centres (issue 21): rollups per tag pair, so a report broken down
-- by one tag, or filtered by one tag, reads one row per value (per
-- workspace) and bucket: as few as a report by model reads. An event adds
-- to one row per pair of its tag set. The roller fills them from the
-- queue with the other rollups (joining the registered sets' pairs), in
-- the hour and day tiers; reports combining a tag with other dimensions
-- read the tag set dimension of the 'all' grouping instead.
CREATE TABLE usage_tag_rollups (
    org_id             {{.UUID}} NOT NULL,
    workspace_id       {{.UUID}} NOT NULL,
    tier               BIGINT NOT NULL,
    bucket             BIGINT NOT NULL,
    tag_key            TEXT NOT NULL,
    tag_value          TEXT NOT NULL,
    requests           BIGINT NOT NULL,
    input_tokens       BIGINT NOT NULL,
    output_tokens      BIGINT NOT NULL,
    cache_read_tokens  BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    cost_nano_usd      BIGINT NOT NULL,
    PRIMARY KEY (org_id, tag_key, tier, bucket, tag_value, workspace_id)
);
