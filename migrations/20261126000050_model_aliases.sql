-- Model aliases (virtual models, issue 19): a name an agent asks for,
-- routed to one of up to eight catalog models by weight. An alias belongs
-- to an organization, or to one of its workspaces, where it overrides the
-- organization's alias of the same name. targets is a JSON array of
-- {"model", "weight"} objects.
CREATE TABLE model_aliases (
    id           {{.UUID}} PRIMARY KEY,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id {{.UUID}} REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    targets      TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL,
    updated_at   {{.Time}} NOT NULL
);
-- A NULL workspace_id never collides in a plain UNIQUE, so each level has
-- its own partial index.
CREATE UNIQUE INDEX model_aliases_org_name ON model_aliases (org_id, name) WHERE workspace_id IS NULL;
CREATE UNIQUE INDEX model_aliases_workspace_name ON model_aliases (workspace_id, name) WHERE workspace_id IS NOT NULL;
