-- SCIM 2.0 provisioning (issue 31, part 2; docs/identity.md).
--
-- scim_tokens are an organization's SCIM tokens: the secret is shown once
-- and stored as its SHA-256 (like management keys); prefix is its first
-- characters, to tell tokens apart in a list.
CREATE TABLE scim_tokens (
    id           {{.UUID}} PRIMARY KEY,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    label        TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_by   {{.UUID}} REFERENCES users (id) ON DELETE SET NULL,
    created_at   {{.Time}} NOT NULL,
    last_used_at {{.Time}}
);
CREATE INDEX scim_tokens_org ON scim_tokens (org_id);

-- scim_users link the accounts an organization's provisioning client
-- created or adopted to that organization, with what the client sent
-- that gw keeps for it (externalId, the name's parts).
CREATE TABLE scim_users (
    org_id      {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id     {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    external_id TEXT NOT NULL,
    given_name  TEXT NOT NULL,
    family_name TEXT NOT NULL,
    created_at  {{.Time}} NOT NULL,
    updated_at  {{.Time}} NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX scim_users_user ON scim_users (user_id);

-- scim_groups are an organization's provisioned groups; their
-- display_name is what the identity providers' group mappings match.
CREATE TABLE scim_groups (
    id           {{.UUID}} PRIMARY KEY,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    display_name TEXT NOT NULL,
    external_id  TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL,
    updated_at   {{.Time}} NOT NULL,
    UNIQUE (org_id, display_name)
);

CREATE TABLE scim_group_members (
    group_id {{.UUID}} NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
    user_id  {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_user ON scim_group_members (user_id);

-- scim_grants record the memberships the group mappings made for an
-- organization's SCIM groups (workspace_id NULL: the organization
-- membership), like sso_grants for sign-ins, so a later change removes
-- only those, never one an administrator made by hand.
CREATE TABLE scim_grants (
    id           {{.UUID}} PRIMARY KEY,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id      {{.UUID}} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id {{.UUID}} REFERENCES workspaces (id) ON DELETE CASCADE,
    role         TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL
);
CREATE INDEX scim_grants_user ON scim_grants (org_id, user_id);
