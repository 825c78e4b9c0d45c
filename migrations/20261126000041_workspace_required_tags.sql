-- Cost centres (issue 21): the tag keys a workspace requires on every
-- request (a JSON list of keys; NULL requires none). A request whose key
-- and X-Gw-Tags header together lack one is refused with 400.
ALTER TABLE workspaces ADD COLUMN required_tags TEXT;
