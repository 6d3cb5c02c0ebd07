"""selectors of the feedback app."""
