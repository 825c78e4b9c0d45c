-- A batch's hold on its budgets (issue 34, part 1; docs/batches.md): the
-- budget holder (a data plane's lease holder) that accepted the batch and
-- holds its upper-bound cost while it runs. A process that restarts under
-- the same holder (its budget journal keeps the name) holds the pending
-- lines' bound again; NULL: no budget applied, or a batch of an earlier
-- version, whose lines each reserve their own bound as they run.
ALTER TABLE batches ADD COLUMN budget_holder TEXT;
