-- Which endpoints a catalog model serves: '' for chat models (chat
-- completions, responses, messages), 'embedding' for embedding models.
ALTER TABLE catalog_models ADD COLUMN model_type TEXT NOT NULL DEFAULT '';
