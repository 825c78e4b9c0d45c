-- Optional per-minute rate limits of inference keys and workspaces (the
-- workspace's are the default and ceiling of its keys'). NULL is no limit.
ALTER TABLE workspaces ADD COLUMN rate_limit_rpm BIGINT;
ALTER TABLE workspaces ADD COLUMN rate_limit_tpm BIGINT;
ALTER TABLE inference_keys ADD COLUMN rate_limit_rpm BIGINT;
ALTER TABLE inference_keys ADD COLUMN rate_limit_tpm BIGINT;
