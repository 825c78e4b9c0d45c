-- Cost centres that hold (issue 28): the values a request's X-Gw-Tags
-- header may give each tag key, a JSON object of lists ({"team": ["ads",
-- "search"]}); NULL restricts nothing. A header naming another value of a
-- listed key is refused with 400 tag_not_allowed.
ALTER TABLE workspaces ADD COLUMN tag_values TEXT;
