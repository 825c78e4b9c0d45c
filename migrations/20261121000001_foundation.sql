-- Foundation: tenancy, identity, management keys, sessions, invitations, audit.
-- Column types are placeholders ({{.UUID}}, {{.Time}}, {{.Bool}}) so that one
-- schema serves SQLite and PostgreSQL.

CREATE TABLE instance_state (
    id               INTEGER PRIMARY KEY,
    cursor_key       TEXT NOT NULL,
    setup_token_hash TEXT,
    bootstrapped_at  {{.Time}},
    created_at       {{.Time}} NOT NULL
);

CREATE TABLE organizations (
    id         {{.UUID}} PRIMARY KEY,
    name       TEXT NOT NULL,
    slug       TEXT NOT NULL UNIQUE,
    created_at {{.Time}} NOT NULL,
    updated_at {{.Time}} NOT NULL
);
CREATE INDEX organizations_page ON organizations (created_at, id);

CREATE TABLE users (
    id              {{.UUID}} PRIMARY KEY,
    email           TEXT NOT NULL UNIQUE,
    name            TEXT NOT NULL,
    password_hash   TEXT,
    instance_role   TEXT NOT NULL,
    service_account {{.Bool}} NOT NULL DEFAULT FALSE,
    managing_org_id {{.UUID}} REFERENCES organizations (id) ON DELETE CASCADE,
    -- Deleted service accounts stay, so their revoked keys still read back.
    deleted_at      {{.Time}},
    created_at      {{.Time}} NOT NULL,
    updated_at      {{.Time}} NOT NULL
);

CREATE TABLE memberships (
    org_id     {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id    {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    status     TEXT NOT NULL,
    created_at {{.Time}} NOT NULL,
    updated_at {{.Time}} NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

CREATE TABLE workspaces (
    id         {{.UUID}} PRIMARY KEY,
    org_id     {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    slug       TEXT NOT NULL,
    created_at {{.Time}} NOT NULL,
    updated_at {{.Time}} NOT NULL,
    UNIQUE (org_id, slug)
);
CREATE INDEX workspaces_org_page ON workspaces (org_id, created_at, id);

CREATE TABLE workspace_members (
    workspace_id {{.UUID}} NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role         TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL,
    updated_at   {{.Time}} NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user ON workspace_members (user_id);

-- A workspace key must never outlive its workspace as a wider key, so scope
-- columns cascade rather than being nulled.
CREATE TABLE management_keys (
    id           {{.UUID}} PRIMARY KEY,
    user_id      {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id       {{.UUID}} REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id {{.UUID}} REFERENCES workspaces (id) ON DELETE CASCADE,
    parent_id    {{.UUID}},
    prefix       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    permissions  TEXT NOT NULL,
    label        TEXT NOT NULL,
    expires_at   {{.Time}},
    revoked_at   {{.Time}},
    created_at   {{.Time}} NOT NULL,
    updated_at   {{.Time}} NOT NULL
);
CREATE INDEX management_keys_user ON management_keys (user_id);
CREATE INDEX management_keys_org ON management_keys (org_id, created_at);

CREATE TABLE sessions (
    id         {{.UUID}} PRIMARY KEY,
    user_id    {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at {{.Time}} NOT NULL,
    expires_at {{.Time}} NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE invitations (
    id          {{.UUID}} PRIMARY KEY,
    org_id      {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email       TEXT NOT NULL,
    role        TEXT NOT NULL,
    token_hash  TEXT NOT NULL UNIQUE,
    invited_by  {{.UUID}} REFERENCES users (id) ON DELETE SET NULL,
    accepted_by {{.UUID}} REFERENCES users (id) ON DELETE SET NULL,
    expires_at  {{.Time}} NOT NULL,
    accepted_at {{.Time}},
    revoked_at  {{.Time}},
    created_at  {{.Time}} NOT NULL,
    updated_at  {{.Time}} NOT NULL
);
CREATE INDEX invitations_org ON invitations (org_id, created_at);

-- Audit events outlive what they describe: no foreign keys.
CREATE TABLE audit_events (
    id           {{.UUID}} PRIMARY KEY,
    org_id       {{.UUID}},
    workspace_id {{.UUID}},
    actor_type   TEXT NOT NULL,
    actor_id     {{.UUID}},
    actor_key_id {{.UUID}},
    action       TEXT NOT NULL,
    target_type  TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    request_id   TEXT NOT NULL,
    details      TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL
);
CREATE INDEX audit_events_page ON audit_events (created_at, id);
CREATE INDEX audit_events_org_page ON audit_events (org_id, created_at, id);
