"""Models of the feedback app: fields, constraints and indexes; no business logic."""
