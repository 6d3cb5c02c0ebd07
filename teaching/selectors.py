"""selectors of the teaching app."""
