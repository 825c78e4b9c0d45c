-- The 2026 price classes: a model's service tiers (priority, flex) as JSON
-- (NULL for none), and the service tier each usage event was billed in
-- (NULL: the answer and the request named none, and events of older data
-- planes).
ALTER TABLE catalog_models ADD COLUMN service_tiers TEXT;
ALTER TABLE usage_events ADD COLUMN service_tier TEXT;

-- Catalogs seeded from an earlier default gain OpenAI's priority and flex
-- prices for the models whose standard prices are still the shipped ones;
-- an operator's own prices are left as they are.
UPDATE catalog_models SET service_tiers = '{"priority":{"input_per_mtok":"3.50","output_per_mtok":"14.00","cache_read_per_mtok":"0.875","cache_write_per_mtok":"3.50"}}'
 WHERE id = 'openai/gpt-4.1' AND input_per_mtok = '2.00' AND output_per_mtok = '8.00' AND cache_read_per_mtok = '0.50' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"priority":{"input_per_mtok":"0.70","output_per_mtok":"2.80","cache_read_per_mtok":"0.175","cache_write_per_mtok":"0.70"}}'
 WHERE id = 'openai/gpt-4.1-mini' AND input_per_mtok = '0.40' AND output_per_mtok = '1.60' AND cache_read_per_mtok = '0.10' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"priority":{"input_per_mtok":"0.20","output_per_mtok":"0.80","cache_read_per_mtok":"0.05","cache_write_per_mtok":"0.20"}}'
 WHERE id = 'openai/gpt-4.1-nano' AND input_per_mtok = '0.10' AND output_per_mtok = '0.40' AND cache_read_per_mtok = '0.025' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"priority":{"input_per_mtok":"4.25","output_per_mtok":"17.00","cache_read_per_mtok":"2.125","cache_write_per_mtok":"4.25"}}'
 WHERE id = 'openai/gpt-4o' AND input_per_mtok = '2.50' AND output_per_mtok = '10.00' AND cache_read_per_mtok = '1.25' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"priority":{"input_per_mtok":"0.25","output_per_mtok":"1.00","cache_read_per_mtok":"0.125","cache_write_per_mtok":"0.25"}}'
 WHERE id = 'openai/gpt-4o-mini' AND input_per_mtok = '0.15' AND output_per_mtok = '0.60' AND cache_read_per_mtok = '0.075' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"flex":{"input_per_mtok":"0.625","output_per_mtok":"5.00","cache_read_per_mtok":"0.0625","cache_write_per_mtok":"0.625"},"priority":{"input_per_mtok":"2.50","output_per_mtok":"20.00","cache_read_per_mtok":"0.25","cache_write_per_mtok":"2.50"}}'
 WHERE id = 'openai/gpt-5' AND input_per_mtok = '1.25' AND output_per_mtok = '10.00' AND cache_read_per_mtok = '0.125' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"flex":{"input_per_mtok":"0.125","output_per_mtok":"1.00","cache_read_per_mtok":"0.0125","cache_write_per_mtok":"0.125"},"priority":{"input_per_mtok":"0.45","output_per_mtok":"3.60","cache_read_per_mtok":"0.045","cache_write_per_mtok":"0.45"}}'
 WHERE id = 'openai/gpt-5-mini' AND input_per_mtok = '0.25' AND output_per_mtok = '2.00' AND cache_read_per_mtok = '0.025' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"flex":{"input_per_mtok":"0.025","output_per_mtok":"0.20","cache_read_per_mtok":"0.0025","cache_write_per_mtok":"0.025"}}'
 WHERE id = 'openai/gpt-5-nano' AND input_per_mtok = '0.05' AND output_per_mtok = '0.40' AND cache_read_per_mtok = '0.005' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"flex":{"input_per_mtok":"0.625","output_per_mtok":"5.00","cache_read_per_mtok":"0.0625","cache_write_per_mtok":"0.625"},"priority":{"input_per_mtok":"2.50","output_per_mtok":"20.00","cache_read_per_mtok":"0.25","cache_write_per_mtok":"2.50"}}'
 WHERE id = 'openai/gpt-5.1' AND input_per_mtok = '1.25' AND output_per_mtok = '10.00' AND cache_read_per_mtok = '0.125' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"flex":{"input_per_mtok":"1.00","output_per_mtok":"4.00","cache_read_per_mtok":"0.25","cache_write_per_mtok":"1.00"},"priority":{"input_per_mtok":"3.50","output_per_mtok":"14.00","cache_read_per_mtok":"0.875","cache_write_per_mtok":"3.50"}}'
 WHERE id = 'openai/o3' AND input_per_mtok = '2.00' AND output_per_mtok = '8.00' AND cache_read_per_mtok = '0.50' AND service_tiers IS NULL;
UPDATE catalog_models SET service_tiers = '{"flex":{"input_per_mtok":"0.55","output_per_mtok":"2.20","cache_read_per_mtok":"0.138","cache_write_per_mtok":"0.55"},"priority":{"input_per_mtok":"2.00","output_per_mtok":"8.00","cache_read_per_mtok":"0.50","cache_write_per_mtok":"2.00"}}'
 WHERE id = 'openai/o4-mini' AND input_per_mtok = '1.10' AND output_per_mtok = '4.40' AND cache_read_per_mtok = '0.275' AND service_tiers IS NULL;
