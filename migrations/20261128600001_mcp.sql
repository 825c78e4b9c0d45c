-- An MCP gateway governed like model calls (issue 30). An MCP server is an
-- upstream Streamable HTTP endpoint of an organization (workspace_id NULL)
-- or of a workspace (which shadows the organization's of the same name).
-- Its auth secret (a header's value or an OAuth client secret) is sealed
-- like a provider credential's, bound to the row's id; the rest of auth
-- (kind, header name, token URL, client id, scopes) is a JSON object.
CREATE TABLE mcp_servers (
    id            {{.UUID}} PRIMARY KEY,
    org_id        {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id  {{.UUID}} REFERENCES workspaces (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    url           TEXT NOT NULL,
    enabled       {{.Bool}} NOT NULL,
    auth          TEXT NOT NULL,
    secret_sealed TEXT,
    secret_hint   TEXT NOT NULL,
    tools         TEXT,
    prices        TEXT,
    created_at    {{.Time}} NOT NULL,
    updated_at    {{.Time}} NOT NULL
);
CREATE INDEX mcp_servers_org ON mcp_servers (org_id);
CREATE INDEX mcp_servers_workspace ON mcp_servers (workspace_id);

-- Tool policies: a workspace's rules over which tools a key may list and
-- call. Their own resource, since the policy schema is closed by the spec.
CREATE TABLE tool_policies (
    id           {{.UUID}} PRIMARY KEY,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id {{.UUID}} NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    enabled      {{.Bool}} NOT NULL,
    definition   TEXT NOT NULL,
    created_at   {{.Time}} NOT NULL,
    updated_at   {{.Time}} NOT NULL
);
CREATE INDEX tool_policies_workspace ON tool_policies (workspace_id);

-- A workspace's MCP settings: whether a tool no tool policy allows is
-- reachable (NULL: "deny"), and whether the audit row of a tool call
-- records its arguments (NULL: no).
ALTER TABLE workspaces ADD COLUMN mcp_default TEXT;
ALTER TABLE workspaces ADD COLUMN mcp_audit_arguments {{.Bool}};
