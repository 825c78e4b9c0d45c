-- The payload archive (issue 32): a workspace's archive setting as JSON
-- text ({enabled, endpoint, region, bucket, prefix, path_style,
-- access_key_id, secret_sealed, retention_days, include}); the secret
-- access key sealed as a provider credential's is. NULL archives nothing.
ALTER TABLE workspaces ADD COLUMN archive TEXT;
