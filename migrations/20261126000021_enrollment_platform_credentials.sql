-- A stolen data-plane folder is worth little (issue 17): instance-wide
-- (platform-scope) provider credentials reach a remote data plane only
-- when its enrollment says so. Enrollments made before this column keep
-- what they had (every credential of their organizations); new ones, and
-- renewed ones (a new key pair), start without platform credentials.
ALTER TABLE data_plane_enrollments ADD COLUMN platform_credentials {{.Bool}} NOT NULL DEFAULT TRUE;
