-- Bedrock caches Claude 4.5 for an hour too, billed as Anthropic bills it
-- (issue 28): catalogs seeded from an earlier default gain the one-hour
-- write prices of the global Claude 4.5 profiles, where their prices are
-- still the shipped ones; an operator's own prices are left as they are.
UPDATE catalog_models SET cache_write_1h_per_mtok = '2'
 WHERE id = 'bedrock/global.anthropic.claude-haiku-4-5-20251001-v1:0'
   AND input_per_mtok = '1' AND cache_write_per_mtok = '1.25' AND cache_write_1h_per_mtok = '';
UPDATE catalog_models SET cache_write_1h_per_mtok = '6',
  long_context = '{"above_input_tokens":200000,"input_per_mtok":"6","output_per_mtok":"22.50","cache_read_per_mtok":"0.60","cache_write_per_mtok":"7.50","cache_write_1h_per_mtok":"12"}'
 WHERE id = 'bedrock/global.anthropic.claude-sonnet-4-5-20250929-v1:0'
   AND input_per_mtok = '3' AND output_per_mtok = '15' AND cache_write_per_mtok = '3.75' AND cache_write_1h_per_mtok = '';
