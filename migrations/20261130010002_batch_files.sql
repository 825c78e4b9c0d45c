-- Files and Batches (issue 34, part 1; docs/batches.md): the control
-- plane keeps a workspace's files and batches, so any data plane serves
-- any of them, and each is found only with its workspace's id.
--
-- batch_files are uploaded files (purpose batch) and the files a batch
-- writes (batch_output); id is gw's own ("file-" and 32 hex digits), the
-- body is kept whole (its size is bounded by batchfile.DefaultLimits). A
-- deleted file keeps its row, deleted_at set, until its batches are gone.
CREATE TABLE batch_files (
    id           TEXT PRIMARY KEY,
    org_id       {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id {{.UUID}} NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    purpose      TEXT NOT NULL,
    filename     TEXT NOT NULL,
    bytes        BIGINT NOT NULL,
    content      {{.Bytes}} NOT NULL,
    created_at   {{.Time}} NOT NULL,
    deleted_at   {{.Time}}
);
CREATE INDEX batch_files_workspace ON batch_files (workspace_id, created_at);

-- batches are a workspace's batches ("batch_" and 32 hex digits), in
-- OpenAI's states; reserved_nano_usd is the upper bound held against the
-- budgets at submission, settled as lines finish.
CREATE TABLE batches (
    id                TEXT PRIMARY KEY,
    org_id            {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    workspace_id      {{.UUID}} NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    inference_key_id  {{.UUID}},
    endpoint          TEXT NOT NULL,
    input_file_id     TEXT NOT NULL,
    completion_window TEXT NOT NULL,
    status            TEXT NOT NULL,
    metadata          TEXT,
    reserved_nano_usd BIGINT NOT NULL DEFAULT 0,
    output_file_id    TEXT,
    error_file_id     TEXT,
    created_at        {{.Time}} NOT NULL,
    updated_at        {{.Time}} NOT NULL
);
CREATE INDEX batches_workspace ON batches (workspace_id, created_at);

-- batch_lines are a batch's requests, one row a line, so a restart
-- resumes exactly where the batch was: a line is pending, running (sent,
-- its request id fixed before the send), or ended (completed, failed,
-- cancelled) with its answer or error.
CREATE TABLE batch_lines (
    batch_id      TEXT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    line          INTEGER NOT NULL,
    custom_id     TEXT NOT NULL,
    status        TEXT NOT NULL,
    request_id    TEXT,
    status_code   INTEGER NOT NULL DEFAULT 0,
    response      TEXT,
    error         TEXT,
    cost_nano_usd BIGINT NOT NULL DEFAULT 0,
    updated_at    {{.Time}} NOT NULL,
    PRIMARY KEY (batch_id, line)
);
