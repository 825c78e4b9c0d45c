-- What each guardrail did to a request (issue 32): a JSON array of
-- {id, name, stage, outcome, detectors}; NULL when none applied.
ALTER TABLE usage_events ADD COLUMN guardrails TEXT;
