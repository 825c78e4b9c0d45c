-- Budget leases (DESIGN §6, §7). A budget counter is one policy's budget of
-- one period and aggregation (and, per_key, one inference key), in one
-- period. seeded_nano_usd is what usage events had already recorded for it
-- when the counter was first asked for. Each data plane (holder) is granted
-- slices of the remainder: granted is all it was ever granted in the
-- period less what it gave back, used what it reported spending, returned
-- all it gave back (asks carry it cumulative: one received twice returns
-- once). A holder never spends beyond its
-- grant, so seeded + the sum of max(granted, used) bounds every spend.
CREATE TABLE budget_counters (
    counter         TEXT NOT NULL,
    period_start    {{.Time}} NOT NULL,
    org_id          {{.UUID}} NOT NULL,
    policy_id       {{.UUID}} NOT NULL,
    policy_name     TEXT NOT NULL,
    inference_key_id {{.UUID}},
    period_end      {{.Time}} NOT NULL,
    limit_nano_usd  BIGINT NOT NULL,
    seeded_nano_usd BIGINT NOT NULL,
    created_at      {{.Time}} NOT NULL,
    updated_at      {{.Time}} NOT NULL,
    PRIMARY KEY (counter, period_start)
);
CREATE INDEX budget_counters_policy ON budget_counters (policy_id, period_start);

CREATE TABLE budget_leases (
    counter         TEXT NOT NULL,
    period_start    {{.Time}} NOT NULL,
    holder          TEXT NOT NULL,
    granted_nano_usd BIGINT NOT NULL,
    used_nano_usd   BIGINT NOT NULL,
    returned_nano_usd BIGINT NOT NULL,
    updated_at      {{.Time}} NOT NULL,
    PRIMARY KEY (counter, period_start, holder)
);
