-- Usage events and data-plane instances. Usage events have no foreign
-- keys: they are history and outlive keys, workspaces and organizations.
-- Cost is integer nano-dollars so sums are exact on both dialects. bucket is
-- the 15-minute slot (unix seconds / 900) an event occurred in: every time
-- zone's offset is a multiple of 15 minutes, so slots group exactly into any
-- zone's days.
CREATE TABLE usage_events (
    id                     {{.UUID}} PRIMARY KEY,
    org_id                 {{.UUID}} NOT NULL,
    workspace_id           {{.UUID}} NOT NULL,
    inference_key_id       {{.UUID}},
    management_key_id      {{.UUID}},
    owner_id               {{.UUID}},
    model                  TEXT NOT NULL,
    provider               TEXT NOT NULL,
    provider_credential_id {{.UUID}},
    input_tokens           BIGINT NOT NULL,
    output_tokens          BIGINT NOT NULL,
    cache_read_tokens      BIGINT NOT NULL,
    cache_write_tokens     BIGINT NOT NULL,
    cost_nano_usd          BIGINT NOT NULL,
    status                 TEXT NOT NULL,
    latency_ms             BIGINT NOT NULL,
    occurred_at            {{.Time}} NOT NULL,
    bucket                 BIGINT NOT NULL,
    received_at            {{.Time}} NOT NULL
);
CREATE INDEX usage_events_org_bucket ON usage_events (org_id, bucket);
CREATE INDEX usage_events_org_page ON usage_events (org_id, occurred_at, id);
CREATE INDEX usage_events_workspace_page ON usage_events (workspace_id, occurred_at, id);

CREATE TABLE data_planes (
    id              TEXT PRIMARY KEY,
    version         TEXT NOT NULL,
    bundle_versions TEXT NOT NULL,
    spool_depth     BIGINT NOT NULL,
    first_seen_at   {{.Time}} NOT NULL,
    last_seen_at    {{.Time}} NOT NULL
);
