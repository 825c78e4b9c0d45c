-- Cost centres (issue 21): usage events record the request's tags, and
-- the rollups keep them as one more dimension, so reports by tag read a
-- number of rows bounded by their window like every other report.
--
-- tags is the event's tag set as a JSON object (NULL: none). tag_set_id
-- names the set: a hash of the organization and the set's canonical JSON
-- (server/tags.SetID), NULL for no tags; equal sets share an id without a
-- lookup. usage_tag_sets registers the sets the rollups keep, and
-- usage_tag_set_members their pairs, which is what a report's tag filter
-- and tag breakdown join on. An organization registers at most
-- store.MaxUsageTagSets sets; past the bound, a new set's events keep
-- their tags but are rolled up under the overflow id (all ff), which no
-- tag filter matches and a tag breakdown reports in a row of its own
-- (docs/metering.md).
ALTER TABLE usage_events ADD COLUMN tags TEXT;
ALTER TABLE usage_events ADD COLUMN tag_set_id {{.UUID}};

CREATE TABLE usage_tag_sets (
    id         {{.UUID}} PRIMARY KEY,
    org_id     {{.UUID}} NOT NULL,
    tags       TEXT NOT NULL,
    created_at {{.Time}} NOT NULL
);
CREATE INDEX usage_tag_sets_org ON usage_tag_sets (org_id);

CREATE TABLE usage_tag_set_members (
    org_id {{.UUID}} NOT NULL,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    set_id {{.UUID}} NOT NULL,
    PRIMARY KEY (org_id, key, value, set_id)
);
CREATE INDEX usage_tag_set_members_set ON usage_tag_set_members (set_id);
