"""tables of the teaching app."""
