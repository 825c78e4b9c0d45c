-- Data-plane enrollment (DESIGN §7): each remote data plane asks to be
-- enrolled with its own public key, and an instance admin chooses the
-- organizations whose bundles (and provider secrets, sealed to that key) it
-- receives. key_id is the management key the request came with: only that
-- key polls as this data plane. No foreign key on it: revoking or deleting
-- the key must not erase the record of what was enrolled.
CREATE TABLE data_plane_enrollments (
    data_plane_id TEXT PRIMARY KEY,
    public_key    TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    key_id        {{.UUID}},
    status        TEXT NOT NULL,
    requested_at  {{.Time}} NOT NULL,
    approved_at   {{.Time}},
    revoked_at    {{.Time}},
    updated_at    {{.Time}} NOT NULL
);

CREATE TABLE data_plane_enrollment_orgs (
    data_plane_id TEXT NOT NULL REFERENCES data_plane_enrollments (data_plane_id) ON DELETE CASCADE,
    org_id        {{.UUID}} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    PRIMARY KEY (data_plane_id, org_id)
);
CREATE INDEX data_plane_enrollment_orgs_org ON data_plane_enrollment_orgs (org_id);
