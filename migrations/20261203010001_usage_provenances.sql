-- An event's provenance stored once per distinct value (issue 33): it is
-- most of an event's row (the prices, every policy rule that applied, the
-- budgets: ≈ 700 bytes for a key under four policies and a budget) and
-- the same for every request of a key until its bundle or prices change.
-- usage_provenances holds each distinct provenance of an organization
-- once, as the JSON an event stored inline before; id is a hash of the
-- organization and that JSON (server/store provenanceID), so equal values
-- share an id without a lookup and two organizations never share a row.
-- A new event stores provenance_id and leaves provenance NULL; events
-- stored before keep theirs inline, and reads take whichever is set.
-- Rows are never deleted, as events are not.
CREATE TABLE usage_provenances (
    id         {{.UUID}} PRIMARY KEY,
    org_id     {{.UUID}} NOT NULL,
    body       TEXT NOT NULL,
    created_at {{.Time}} NOT NULL
);
CREATE INDEX usage_provenances_org ON usage_provenances (org_id);

ALTER TABLE usage_events ADD COLUMN provenance_id {{.UUID}};
