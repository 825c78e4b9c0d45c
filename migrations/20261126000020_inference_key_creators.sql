-- Disabled means disabled (issue 17): disabling an account revokes the
-- inference keys it owns and those it created for others, whose plaintext
-- it was shown. created_by is the user (or service account) who issued the
-- key; no foreign key, like the audit log it is filled from. Keys issued
-- before this column are given the actor of their inference_key.issued
-- audit entry; a key without one keeps NULL and is revoked through its
-- owner only.
ALTER TABLE inference_keys ADD COLUMN created_by {{.UUID}};
UPDATE inference_keys SET created_by = issued.actor_id
FROM (SELECT target_id, actor_id FROM audit_events
      WHERE action = 'inference_key.issued' AND target_type = 'inference_key' AND actor_id IS NOT NULL) AS issued
WHERE issued.target_id = CAST(inference_keys.id AS TEXT);
CREATE INDEX inference_keys_created_by ON inference_keys (created_by);
