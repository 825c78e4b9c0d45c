-- Prompt-cache injection (issue 35, part 4): a workspace's setting as JSON
-- text ({inject, min_prefix_tokens}); NULL injects nothing.
ALTER TABLE workspaces ADD COLUMN prompt_cache TEXT;
