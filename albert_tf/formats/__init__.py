"""Weight formats: Google's TF1 checkpoints, keras-hub presets and Hugging Face
folders, each mapped from the canonical Google names of modeling/names.py."""
