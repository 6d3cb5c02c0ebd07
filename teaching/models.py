"""Models of the teaching app: fields, constraints and indexes; no business logic."""
