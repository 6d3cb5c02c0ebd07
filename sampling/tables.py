"""tables of the sampling app."""
