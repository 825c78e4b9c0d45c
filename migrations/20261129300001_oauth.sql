-- gw as the OAuth 2.1 authorization server of MCP and CLI clients (issue
-- 31, part 3; docs/identity.md).
--
-- oauth_clients are the clients an administrator registered (a client
-- identified by a Client ID Metadata Document, an https URL, needs no
-- row). redirect_uris is a JSON list, matched exactly; secret_hash is set
-- for a confidential client (client_secret_basic), NULL for a public one.
CREATE TABLE oauth_clients (
    id            {{.UUID}} PRIMARY KEY,
    client_id     TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    secret_hash   TEXT,
    created_by    {{.UUID}},
    created_at    {{.Time}} NOT NULL
);

-- oauth_grants are a person's consents: a client may act as them in one
-- workspace, for one resource (RFC 8707). A live grant (not revoked) of an
-- active member is carried by the organization's bundle; the access tokens
-- issued under it are signed and name it, so revoking it (or disabling the
-- person) stops them at the next bundle.
CREATE TABLE oauth_grants (
    id             {{.UUID}} PRIMARY KEY,
    org_id         {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id   {{.UUID}} NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id        {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id      TEXT NOT NULL,
    client_name    TEXT NOT NULL,
    resource       TEXT NOT NULL,
    scope          TEXT NOT NULL,
    created_at     {{.Time}} NOT NULL,
    last_used_at   {{.Time}},
    revoked_at     {{.Time}},
    revoked_reason TEXT
);
CREATE INDEX oauth_grants_org ON oauth_grants (org_id);
CREATE INDEX oauth_grants_workspace ON oauth_grants (workspace_id);

-- oauth_codes are authorization codes, found by their hash; used_at is set
-- when one is redeemed, so a replay is recognized (and revokes its grant).
CREATE TABLE oauth_codes (
    code_hash      TEXT PRIMARY KEY,
    grant_id       {{.UUID}} NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    client_id      TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    expires_at     {{.Time}} NOT NULL,
    used_at        {{.Time}}
);

-- oauth_refresh_tokens are refresh tokens by hash. Each is used once: its
-- use sets used_at and issues the next; presenting a used one revokes the
-- grant (OAuth 2.1 §4.3.1).
CREATE TABLE oauth_refresh_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id   {{.UUID}} NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    created_at {{.Time}} NOT NULL,
    expires_at {{.Time}} NOT NULL,
    used_at    {{.Time}}
);
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);

-- The instance setting oauth_cimd_allow_private: Client ID Metadata
-- Documents may be fetched from private and loopback addresses.
ALTER TABLE instance_state ADD COLUMN oauth_cimd_allow_private {{.Bool}};
