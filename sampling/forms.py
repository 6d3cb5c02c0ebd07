"""forms of the sampling app."""
