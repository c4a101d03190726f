"""Keras files (`.keras`) of albert_tf models and layers, loadable in a fresh process.

`import albert_tf` loads its names lazily, so Keras has not seen the albert_tf classes yet when a
`.keras` file names them; `load_model` registers them all first.
"""

from albert_tf.core import fileio


def register_keras_classes() -> None:
    """Import every albert_tf module whose classes a .keras file may name (models, layers, and
    the optimizers and schedules of a compiled model); it sits above them all for that."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.engine import optimizers  # noqa: F401  (imports learning_rate too)

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.keras_api import models as text_models  # noqa: F401

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.modeling import albert_model, finetuning_models, squad_models  # noqa: F401

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.text import graph_tokenizer  # noqa: F401


def load_model(path, **kwargs):
    """keras.saving.load_model for files holding albert_tf models or layers (on any filesystem)."""
    # deferred: keeps TensorFlow off this module's import
    import keras

    register_keras_classes()
    with fileio.local_copy(path) as local:  # any filesystem: Keras reads a local copy
        return keras.saving.load_model(local, **kwargs)
