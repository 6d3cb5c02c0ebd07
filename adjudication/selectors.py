"""selectors of the adjudication app."""
