"""Checkpoint formats: Google's TF1 variable names (and their map to the Keras layers)."""
