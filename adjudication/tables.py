"""tables of the adjudication app."""
