"""Models of the adjudication app: fields, constraints and indexes; no business logic."""
