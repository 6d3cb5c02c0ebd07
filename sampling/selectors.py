"""selectors of the sampling app."""
