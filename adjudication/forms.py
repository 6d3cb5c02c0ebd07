"""forms of the adjudication app."""
