"""Models of the sampling app: fields, constraints and indexes; no business logic."""
