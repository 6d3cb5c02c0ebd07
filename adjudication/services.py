"""services of the adjudication app."""
