"""Run results: parsing the core's result JSON (`parse`), metric definitions (`metrics`),
per-interval series (`series`), theory references (`theory`), exports (`export`) and
provenance (`provenance`)."""
