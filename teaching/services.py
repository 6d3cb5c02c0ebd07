"""services of the teaching app."""
