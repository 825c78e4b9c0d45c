-- Usage rollups (issue 12): the sums of usage events per time bucket, so a
-- report reads a number of rows bounded by its window, not by the history.
--
-- grouped_by names which dimensions a row keeps: 'all' keeps every dimension
-- a report filters or breaks down by (any report can be answered from
-- it); 'org' keeps none (the unfiltered report: one row per bucket); each
-- other grouped_by keeps the one dimension it is named after (a report
-- filtered, or broken down, by that dimension alone). A report reads the
-- smallest grouped_by that keeps every dimension it needs.
--
-- tier is a bucket's width in 15-minute slots: 1 (15 minutes, the finest
-- step of any time zone's offset), 4 (a UTC hour) or 96 (a UTC day); bucket
-- is the bucket's index in units of that width (unix seconds / (900 × tier),
-- rounded down). A report takes each part of its window from the coarsest
-- tier whose buckets lie wholly inside one of its local days.
--
-- A missing (or not kept) dimension is stored as the nil UUID or the empty
-- string, so the primary key has no NULLs and an upsert finds its row on
-- both dialects.
--
-- Ingest does not touch the rollups: in the transaction that stores new
-- events it appends their dimensions and counters to usage_rollup_queue,
-- and a roller in the control plane moves the queue into the rollups a few
-- thousand groups at a time (one grouped upsert per grouped_by and tier, so
-- a busy minute's events become a few rows). A report reads the rollups
-- and the queue in one snapshot, so it is exact whether or not the roller
-- has caught up.
CREATE TABLE usage_rollups (
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
    requests               BIGINT NOT NULL,
    input_tokens           BIGINT NOT NULL,
    output_tokens          BIGINT NOT NULL,
    cache_read_tokens      BIGINT NOT NULL,
    cache_write_tokens     BIGINT NOT NULL,
    cost_nano_usd          BIGINT NOT NULL,
    PRIMARY KEY (org_id, grouped_by, tier, bucket, workspace_id, inference_key_id, management_key_id, owner_id,
                 provider_credential_id, model, requested_model, provider, status)
);

CREATE TABLE usage_rollup_queue (
    org_id                 {{.UUID}} NOT NULL,
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
    requests               BIGINT NOT NULL,
    input_tokens           BIGINT NOT NULL,
    output_tokens          BIGINT NOT NULL,
    cache_read_tokens      BIGINT NOT NULL,
    cache_write_tokens     BIGINT NOT NULL,
    cost_nano_usd          BIGINT NOT NULL
);

-- Back-fill: the events already stored are queued, grouped, for the
-- roller, which rolls them up once gw serves (reports count the queue
-- meanwhile, so they are exact from the start).
INSERT INTO usage_rollup_queue (org_id, bucket, workspace_id, inference_key_id, management_key_id, owner_id,
                                provider_credential_id, model, requested_model, provider, status,
                                requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_nano_usd)
SELECT org_id, bucket, workspace_id,
       COALESCE(inference_key_id, '00000000-0000-0000-0000-000000000000'),
       COALESCE(management_key_id, '00000000-0000-0000-0000-000000000000'),
       COALESCE(owner_id, '00000000-0000-0000-0000-000000000000'),
       COALESCE(provider_credential_id, '00000000-0000-0000-0000-000000000000'),
       model, COALESCE(requested_model, ''), provider, status,
       COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens), SUM(cost_nano_usd)
FROM usage_events
GROUP BY org_id, bucket, workspace_id,
         COALESCE(inference_key_id, '00000000-0000-0000-0000-000000000000'),
         COALESCE(management_key_id, '00000000-0000-0000-0000-000000000000'),
         COALESCE(owner_id, '00000000-0000-0000-0000-000000000000'),
         COALESCE(provider_credential_id, '00000000-0000-0000-0000-000000000000'),
         model, COALESCE(requested_model, ''), provider, status;

-- Reports no longer read the events by bucket (only their ragged ends, by
-- time, through usage_events_org_page): one index fewer to keep at ingest.
DROP INDEX IF EXISTS usage_events_org_bucket;
