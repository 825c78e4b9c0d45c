-- A provider credential's non-secret settings (a JSON object: a Bedrock
-- region, a Vertex AI project and location, an Azure OpenAI api-version
-- and deployments); NULL for the credentials that need none.
ALTER TABLE provider_credentials ADD COLUMN settings TEXT;
