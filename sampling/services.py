"""services of the sampling app."""
