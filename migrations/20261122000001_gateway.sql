-- Gateway resources: the model catalog, provider credentials (secrets
-- sealed), inference keys (hashes only), workspace policies and the
-- compiled, signed bundle of each organization.

CREATE TABLE catalog_providers (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    base_url   TEXT NOT NULL,
    retired_at {{.Time}},
    created_at {{.Time}} NOT NULL,
    updated_at {{.Time}} NOT NULL
);

-- Prices stay decimal strings: they are multiplied exactly in Go, never
-- summed in SQL.
CREATE TABLE catalog_models (
    id                   TEXT PRIMARY KEY,
    provider             TEXT NOT NULL REFERENCES catalog_providers (id),
    name                 TEXT NOT NULL,
    context_window       BIGINT NOT NULL,
    max_output_tokens    BIGINT NOT NULL,
    input_per_mtok       TEXT NOT NULL,
    output_per_mtok      TEXT NOT NULL,
    cache_read_per_mtok  TEXT NOT NULL,
    cache_write_per_mtok TEXT NOT NULL,
    capabilities         TEXT NOT NULL,
    modalities           TEXT NOT NULL,
    released             BIGINT NOT NULL,
    retired_at           {{.Time}},
    created_at           {{.Time}} NOT NULL,
    updated_at           {{.Time}} NOT NULL
);
CREATE INDEX catalog_models_provider ON catalog_models (provider);

-- Scope: platform (no org), organization (org only) or workspace (both).
CREATE TABLE provider_credentials (
    id            {{.UUID}} PRIMARY KEY,
    org_id        {{.UUID}} REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id  {{.UUID}} REFERENCES workspaces (id) ON DELETE CASCADE,
    provider      TEXT NOT NULL,
    label         TEXT NOT NULL,
    base_url      TEXT,
    secret_sealed TEXT NOT NULL,
    secret_hint   TEXT NOT NULL,
    created_at    {{.Time}} NOT NULL,
    updated_at    {{.Time}} NOT NULL
);
CREATE INDEX provider_credentials_org ON provider_credentials (org_id);
CREATE INDEX provider_credentials_workspace ON provider_credentials (workspace_id);

CREATE TABLE inference_keys (
    id           {{.UUID}} PRIMARY KEY,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id {{.UUID}} NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    expires_at   {{.Time}},
    revoked_at   {{.Time}},
    created_at   {{.Time}} NOT NULL,
    updated_at   {{.Time}} NOT NULL
);
CREATE INDEX inference_keys_workspace ON inference_keys (workspace_id, created_at);
CREATE INDEX inference_keys_org ON inference_keys (org_id);

CREATE TABLE policies (
    id           {{.UUID}} PRIMARY KEY,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id {{.UUID}} NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    enabled      {{.Bool}} NOT NULL,
    definition   TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL,
    updated_at   {{.Time}} NOT NULL,
    UNIQUE (workspace_id, name)
);
CREATE INDEX policies_org ON policies (org_id);

-- The latest compiled bundle per organization. version only grows.
CREATE TABLE bundles (
    org_id      {{.UUID}} PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    version     BIGINT NOT NULL,
    hash        TEXT NOT NULL,
    signature   TEXT NOT NULL,
    body        TEXT NOT NULL,
    compiled_at {{.Time}} NOT NULL
);

-- The bundle signing key pair, the private half sealed with the instance
-- secret key, shared by every control-plane replica.
ALTER TABLE instance_state ADD COLUMN bundle_public_key TEXT;
ALTER TABLE instance_state ADD COLUMN bundle_private_key_sealed TEXT;
