"""Weight formats: Google's TF1 checkpoints (brightmart/albert_zh's too), keras-hub presets and
Hugging Face folders, each mapped to and from the Google variable names of modeling/names.py."""
