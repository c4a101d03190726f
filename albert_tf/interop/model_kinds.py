"""The kinds of model a converter can be asked to build (`--model`), in a module that imports
nothing heavy, so the command line's choices need no TensorFlow."""

# --model values: what to build from a checkpoint that does not say itself
MODEL_KINDS = (
    "pretrainer",
    "encoder",
    "classifier",
    "regression",
    "multi_label",
    "token_classifier",
    "multiple_choice",
    "squad_v1",
    "squad_v2",
)
POOLED_KINDS = ("classifier", "regression", "multi_label", "token_classifier", "multiple_choice")
