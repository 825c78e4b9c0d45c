-- Prices as the providers bill them: cache writes kept for an hour
-- (empty: the five-minute price) and a long-context tier (JSON, NULL for
-- none) that prices a whole request once its input passes a threshold.
ALTER TABLE catalog_models ADD COLUMN cache_write_1h_per_mtok TEXT NOT NULL DEFAULT '';
ALTER TABLE catalog_models ADD COLUMN long_context TEXT;

-- Catalogs seeded from an earlier default gain the new figures for the
-- models whose prices are still the shipped ones; an operator's own
-- prices are left as they are.
UPDATE catalog_models SET cache_write_1h_per_mtok = '10'
 WHERE id = 'anthropic/claude-opus-4-5-20251101' AND input_per_mtok = '5' AND cache_write_per_mtok = '6.25';
UPDATE catalog_models SET cache_write_1h_per_mtok = '2'
 WHERE id = 'anthropic/claude-haiku-4-5-20251001' AND input_per_mtok = '1' AND cache_write_per_mtok = '1.25';
UPDATE catalog_models SET cache_write_1h_per_mtok = '30'
 WHERE id IN ('anthropic/claude-opus-4-1-20250805', 'anthropic/claude-opus-4-20250514') AND input_per_mtok = '15' AND cache_write_per_mtok = '18.75';
UPDATE catalog_models SET cache_write_1h_per_mtok = '1.60'
 WHERE id = 'anthropic/claude-3-5-haiku-20241022' AND input_per_mtok = '0.80' AND cache_write_per_mtok = '1';
UPDATE catalog_models SET cache_write_1h_per_mtok = '0.50'
 WHERE id = 'anthropic/claude-3-haiku-20240307' AND input_per_mtok = '0.25' AND cache_write_per_mtok = '0.30';
UPDATE catalog_models SET cache_write_1h_per_mtok = '6', context_window = 1000000,
  long_context = '{"above_input_tokens":200000,"input_per_mtok":"6","output_per_mtok":"22.50","cache_read_per_mtok":"0.60","cache_write_per_mtok":"7.50","cache_write_1h_per_mtok":"12"}'
 WHERE id IN ('anthropic/claude-sonnet-4-5-20250929', 'anthropic/claude-sonnet-4-20250514')
   AND input_per_mtok = '3' AND output_per_mtok = '15' AND cache_write_per_mtok = '3.75';
UPDATE catalog_models SET
  long_context = '{"above_input_tokens":200000,"input_per_mtok":"2.50","output_per_mtok":"15.00","cache_read_per_mtok":"0.25","cache_write_per_mtok":"2.50"}'
 WHERE id = 'google/gemini-2.5-pro' AND input_per_mtok = '1.25' AND output_per_mtok = '10.00';
UPDATE catalog_models SET
  long_context = '{"above_input_tokens":200000,"input_per_mtok":"4.00","output_per_mtok":"18.00","cache_read_per_mtok":"0.40","cache_write_per_mtok":"4.00"}'
 WHERE id = 'google/gemini-3-pro-preview' AND input_per_mtok = '2.00' AND output_per_mtok = '12.00';
