-- The instance's egress setting (issue 27): address ranges gw refuses, and
-- exceptions it allows, for every URL it calls, beyond its built-in
-- refusals (cloud metadata, link-local, unspecified). egress is a JSON
-- object {"deny": [cidr…], "allow": [cidr…]}, NULL while never set;
-- egress_revision counts its changes, so a data plane holding bundles
-- compiled before and after a change enforces the newer.
ALTER TABLE instance_state ADD COLUMN egress TEXT;
ALTER TABLE instance_state ADD COLUMN egress_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE instance_state ADD COLUMN settings_updated_at {{.Time}};
