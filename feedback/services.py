"""services of the feedback app."""
