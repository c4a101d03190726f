"""The driver flags that have no path yet on a Keras backend other than TensorFlow, refused
with one error line naming the flag before any work (drivers/validation.py calls this)."""

from __future__ import annotations

import os

from albert_tf.core.errors import InputError

# flag -> why it has no path on JAX yet, and what to do instead
TENSORFLOW_ONLY_FLAGS = {
    "export_dir": "exports (the raw-text SavedModel, LiteRT, ONNX) are written by the "
    "TensorFlow backend only so far; train on JAX with --do_eval (the best checkpoint is "
    "Google's TF1 format), then run the same command with KERAS_BACKEND=tensorflow and "
    "--export_dir, without --do_train",
}


def check_backend_flags(FLAGS):
    """Refuses, on a backend other than TensorFlow, a flag that has no path there yet.

    Args:
        FLAGS: absl flags (or any object with the flags as attributes).

    Raises:
        InputError: naming the first such flag that is set.

    Example:

    >>> import types
    >>> from albert_tf.drivers.backend_flags import check_backend_flags
    >>> check_backend_flags(types.SimpleNamespace(export_dir=None))
    """
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend == "tensorflow":
        return
    for flag, why in TENSORFLOW_ONLY_FLAGS.items():
        if getattr(FLAGS, flag, None):
            raise InputError(f"--{flag} with KERAS_BACKEND={backend}: {why}")
