-- An instance admin can disable an account (issue 10, item 7): its sessions
-- end, its keys are revoked, and it cannot sign in until enabled again.
ALTER TABLE users ADD COLUMN disabled_at {{.Time}};
-- Sessions say where they came from, so a person listing their sessions can
-- tell them apart before ending one.
ALTER TABLE sessions ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN client_address TEXT NOT NULL DEFAULT '';
