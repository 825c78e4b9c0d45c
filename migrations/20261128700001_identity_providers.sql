-- Enterprise identity, OpenID Connect sign-in (issue 31, part 1).
--
-- identity_providers are the instance's OpenID providers. The client
-- secret is sealed like a provider credential's (bound to the row's id);
-- discovery is the provider's discovery document as fetched when the row
-- was saved (its endpoints and keys URL). claim_* name the ID-token claims
-- read; group_mappings is a JSON list of {group, org_id, role, workspaces:
-- [{workspace_id, role}]}.
CREATE TABLE identity_providers (
    id                    {{.UUID}} PRIMARY KEY,
    name                  TEXT NOT NULL UNIQUE,
    kind                  TEXT NOT NULL,
    issuer                TEXT NOT NULL,
    client_id             TEXT NOT NULL,
    client_secret_sealed  TEXT,
    secret_hint           TEXT,
    scopes                TEXT NOT NULL,
    claim_email           TEXT NOT NULL,
    claim_name            TEXT NOT NULL,
    claim_groups          TEXT NOT NULL,
    allowed_email_domains TEXT NOT NULL,
    jit                   {{.Bool}} NOT NULL,
    group_mappings        TEXT NOT NULL,
    discovery             TEXT NOT NULL,
    created_at            {{.Time}} NOT NULL,
    updated_at            {{.Time}} NOT NULL
);

-- sso_logins are sign-ins under way: one row from /start to /callback,
-- found by the hash of its state and deleted when the callback uses it (a
-- replayed state finds nothing). The PKCE verifier and the nonce never
-- leave the server.
CREATE TABLE sso_logins (
    state_hash    TEXT PRIMARY KEY,
    provider_id   {{.UUID}} NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
    nonce         TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    return_to     TEXT NOT NULL,
    created_at    {{.Time}} NOT NULL,
    expires_at    {{.Time}} NOT NULL
);

-- user_identities link a provider's subject to a gw account; groups are
-- the groups of the latest sign-in.
CREATE TABLE user_identities (
    provider_id    {{.UUID}} NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
    subject        TEXT NOT NULL,
    user_id        {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email          TEXT NOT NULL,
    groups         TEXT NOT NULL,
    created_at     {{.Time}} NOT NULL,
    last_signed_in {{.Time}} NOT NULL,
    PRIMARY KEY (provider_id, subject)
);
CREATE INDEX user_identities_user ON user_identities (user_id);

-- sso_grants record the memberships a provider's group mappings made
-- (workspace_id NULL: the organization membership), so a later sign-in
-- removes only those, never one an administrator made by hand.
CREATE TABLE sso_grants (
    id           {{.UUID}} PRIMARY KEY,
    provider_id  {{.UUID}} NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
    user_id      {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id {{.UUID}} REFERENCES workspaces (id) ON DELETE CASCADE,
    role         TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL
);
CREATE INDEX sso_grants_user ON sso_grants (user_id);

-- An organization's require_sso: the providers its members must sign in
-- through (a JSON list of names; NULL, none).
ALTER TABLE organizations ADD COLUMN require_sso TEXT;
