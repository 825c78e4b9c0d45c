-- Batches run by remote data planes (issue 34, part 1; docs/batches.md):
-- taken_by is the data plane that took a running line (NULL: the
-- control plane's own), so a data plane that starts again ends as
-- interrupted only the lines it had taken, never another plane's in
-- flight. The unique index makes a take idempotent by its request id: a
-- retried take finds the line it took, and two takes under one id cannot
-- hold two lines (NULLs, the pending lines', are distinct).
ALTER TABLE batch_lines ADD COLUMN taken_by TEXT;
CREATE UNIQUE INDEX batch_lines_request ON batch_lines (batch_id, request_id);
