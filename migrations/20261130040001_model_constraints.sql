-- A catalog model's request constraints (issue 35): what the model refuses
-- of a request its API otherwise takes (sampling parameters, a forced tool
-- choice) and the anthropic-version it is called with, as JSON
-- (catalog.Constraints); NULL for none. No shipped model carries any, so
-- existing rows stay as they are.
ALTER TABLE catalog_models ADD COLUMN constraints TEXT;
