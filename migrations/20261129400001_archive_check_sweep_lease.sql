-- What the control plane last learnt of a workspace's archive bucket
-- (issue 32): JSON {ok, error, checked_at, by} written when the setting
-- is saved ("save") and at each hourly retention sweep ("sweep"); NULL
-- when no enabled archive was checked. gw status reads it.
ALTER TABLE workspaces ADD COLUMN archive_check TEXT;

-- Leases: one control-plane replica at a time holds a named job (the
-- archive retention sweep) until expires_at, so two replicas never run
-- it together (and never audit one deletion twice).
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at {{.Time}} NOT NULL
);
