-- Guardrails (issue 32): detectors over what callers send and what they
-- get back, at an organization (every workspace) or one workspace.
-- definition is the JSON of target, stages, detectors, action and
-- on_error; a webhook detector's signing secret is sealed in it
-- (secret_sealed), bound to the guardrail and the webhook's URL, and is
-- never answered back.
CREATE TABLE guardrails (
    id           {{.UUID}} PRIMARY KEY,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id {{.UUID}} REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    enabled      {{.Bool}} NOT NULL,
    definition   TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL,
    updated_at   {{.Time}} NOT NULL
);
CREATE UNIQUE INDEX guardrails_org_name ON guardrails (org_id, name) WHERE workspace_id IS NULL;
CREATE UNIQUE INDEX guardrails_workspace_name ON guardrails (workspace_id, name) WHERE workspace_id IS NOT NULL;
CREATE INDEX guardrails_org ON guardrails (org_id);
