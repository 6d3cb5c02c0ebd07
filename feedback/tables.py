"""tables of the feedback app."""
