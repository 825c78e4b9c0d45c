-- A line's upper-bound cost (issue 34, part 1; docs/batches.md), as its
-- batch's submission counted it: JSON {nano_usd, model, provider,
-- input_tokens, output_tokens}, the model that gave the largest bound.
-- When a remote data plane that took the line is lost (its heartbeat
-- stale, its enrollment for the organization withdrawn), the control
-- plane ends the line and records its usage event at this bound: the
-- request may have reached its upstream. NULL for lines of older batches,
-- which are left for their plane to end.
ALTER TABLE batch_lines ADD COLUMN bound TEXT;
-- The control plane looks for such lines every minute: the running lines
-- remote planes hold, a few, out of every line of every batch.
CREATE INDEX batch_lines_taken ON batch_lines (taken_by) WHERE taken_by IS NOT NULL AND status = 'running';
