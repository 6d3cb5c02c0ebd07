"""forms of the teaching app."""
