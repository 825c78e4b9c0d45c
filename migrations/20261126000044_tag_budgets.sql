-- Cost centres (issue 21): a budget for the keys carrying one tag. It is
-- an ordinary policy (a selected_keys target, a shared budget rule); this
-- table only remembers which tag its key list follows, so gw rewrites the
-- list in the transaction that issues, re-tags or revokes a key of the
-- workspace (docs/budgets.md). Deleting the policy deletes the link.
CREATE TABLE tag_budgets (
    policy_id    {{.UUID}} PRIMARY KEY REFERENCES policies (id) ON DELETE CASCADE,
    org_id       {{.UUID}} NOT NULL,
    workspace_id {{.UUID}} NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    tag_key      TEXT NOT NULL,
    tag_value    TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL
);
CREATE INDEX tag_budgets_workspace ON tag_budgets (workspace_id);
