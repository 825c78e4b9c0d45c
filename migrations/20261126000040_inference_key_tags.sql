-- Cost centres (issue 21): an inference key's tags, a JSON object of up to
-- 20 string pairs (team, feature, environment, …) that every usage event
-- of the key records; NULL for a key without tags.
ALTER TABLE inference_keys ADD COLUMN tags TEXT;
