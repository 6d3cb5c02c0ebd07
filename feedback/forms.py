"""forms of the feedback app."""
