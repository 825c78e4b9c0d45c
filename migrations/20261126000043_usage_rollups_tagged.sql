-- Cost centres (issue 21): the rollups keep the tag set as a dimension
-- (usage_tag_sets, 20261126000042), the queue too.
-- The rollups' primary key gains the tag set, so the table is rebuilt
-- (SQLite cannot change a primary key in place). Rows so far have no tags.
CREATE TABLE usage_rollups_tagged (
    org_id                 {{.UUID}} NOT NULL,
    grouped_by             TEXT NOT NULL,
    tier                   BIGINT NOT NULL,
    bucket                 BIGINT NOT NULL,
    workspace_id           {{.UUID}} NOT NULL,
    inference_key_id       {{.UUID}} NOT NULL,
    management_key_id      {{.UUID}} NOT NULL,
    owner_id               {{.UUID}} NOT NULL,
    provider_credential_id {{.UUID}} NOT NULL,
    model                  TEXT NOT NULL,
    requested_model        TEXT NOT NULL,
    provider               TEXT NOT NULL,
    status                 TEXT NOT NULL,
    tag_set_id             {{.UUID}} NOT NULL,
    requests               BIGINT NOT NULL,
    input_tokens           BIGINT NOT NULL,
    output_tokens          BIGINT NOT NULL,
    cache_read_tokens      BIGINT NOT NULL,
    cache_write_tokens     BIGINT NOT NULL,
    cost_nano_usd          BIGINT NOT NULL,
    PRIMARY KEY (org_id, grouped_by, tier, bucket, workspace_id, inference_key_id, management_key_id, owner_id,
                 provider_credential_id, model, requested_model, provider, status, tag_set_id)
);
INSERT INTO usage_rollups_tagged (org_id, grouped_by, tier, bucket, workspace_id, inference_key_id, management_key_id, owner_id,
                                  provider_credential_id, model, requested_model, provider, status, tag_set_id,
                                  requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_nano_usd)
SELECT org_id, grouped_by, tier, bucket, workspace_id, inference_key_id, management_key_id, owner_id,
       provider_credential_id, model, requested_model, provider, status, '00000000-0000-0000-0000-000000000000',
       requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_nano_usd
FROM usage_rollups;
DROP TABLE usage_rollups;
ALTER TABLE usage_rollups_tagged RENAME TO usage_rollups;

ALTER TABLE usage_rollup_queue ADD COLUMN tag_set_id {{.UUID}} NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000';
