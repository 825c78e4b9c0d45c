-- Native batches (issue 34; docs/batches.md): the lines of a batch that
-- run on a provider's own batch API (OpenAI's and Azure OpenAI's Batches,
-- Anthropic's Message Batches) are grouped, one provider batch per
-- credential and upstream model. A group is pending (nothing sent),
-- submitting (its input file uploaded, upstream_file_id set, and the
-- batch about to be created: a process that stops here looks for the
-- provider batch before creating one, never creating two), submitted
-- (upstream_batch_id recorded: polled until it ends) or ended (its
-- results read, each of its lines ended and metered once).
CREATE TABLE batch_upstreams (
    batch_id          TEXT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    seq               INTEGER NOT NULL,
    kind              TEXT NOT NULL,
    credential_id     {{.UUID}} NOT NULL,
    model             TEXT NOT NULL,
    upstream_model    TEXT NOT NULL,
    status            TEXT NOT NULL,
    upstream_file_id  TEXT,
    upstream_batch_id TEXT,
    submitting_at     {{.Time}},
    error             TEXT,
    updated_at        {{.Time}} NOT NULL,
    PRIMARY KEY (batch_id, seq)
);

-- A line in a provider batch has status upstream and its group's seq; its
-- request_id (its usage event's id) is fixed when the batch is created.
ALTER TABLE batch_lines ADD COLUMN upstream_seq INTEGER;
