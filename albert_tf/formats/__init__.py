"""Weight formats: Google's TF1 checkpoints (and brightmart/albert_zh's), Google's TF2 releases
(TF Hub / Kaggle SavedModels, Model Garden checkpoints), keras-hub presets and Hugging Face
folders, each mapped from the canonical Google names of modeling/names.py."""
