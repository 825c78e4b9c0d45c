-- Device-style CLI sign-in. The poll secret is stored as a hash; the key
-- minted on the first poll after approval is recorded, never its token.
CREATE TABLE cli_authorizations (
    id               {{.UUID}} PRIMARY KEY,
    poll_secret_hash TEXT NOT NULL UNIQUE,
    user_code        TEXT NOT NULL UNIQUE,
    label            TEXT NOT NULL,
    status           TEXT NOT NULL,
    interval_seconds INTEGER NOT NULL,
    user_id          {{.UUID}} REFERENCES users (id) ON DELETE CASCADE,
    org_id           {{.UUID}} REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id     {{.UUID}} REFERENCES workspaces (id) ON DELETE CASCADE,
    permissions      TEXT NOT NULL,
    key_id           {{.UUID}},
    last_poll_at     {{.Time}},
    expires_at       {{.Time}} NOT NULL,
    decided_at       {{.Time}},
    created_at       {{.Time}} NOT NULL
);
