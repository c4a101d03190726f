"""Load Keras files (`.keras`) of albert_tf models and layers, in any process.

`import albert_tf` imports its public names lazily, so in a fresh process Keras does not yet know
the albert_tf classes a `.keras` file names; `load_model` registers them all first.
"""

from albert_tf.core import fileio


def register_keras_classes() -> None:
    """Register with Keras every albert_tf class a `.keras` file may name.

    Imports the modules of the models, layers, tokenizer layers, and the optimizers and
    learning-rate schedules of a compiled model. This module sits above them all in the
    package's layers so that it may import them.
    """
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.engine import optimizers  # noqa: F401  (imports learning_rate too)

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.keras_api import models as text_models  # noqa: F401

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.modeling import albert_model, finetuning_models, squad_models  # noqa: F401

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.text import graph_tokenizer  # noqa: F401


def load_model(path, **kwargs):
    """Load a `.keras` file holding albert_tf models or layers.

    Same as `keras.saving.load_model`, but registers every albert_tf class first (so it works
    in a fresh process) and reads from any filesystem TensorFlow knows (local, gs://, ...)
    through a local copy.

    Args:
        path: str or path-like. The `.keras` file.
        **kwargs: passed on to `keras.saving.load_model` (e.g. `compile=False`).

    Returns:
        The loaded Keras model, e.g. an `AlbertClassifier` or an `AlbertTextClassifier`.

    Example:

    >>> import os, tempfile, numpy as np, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> path = os.path.join(tempfile.mkdtemp(), "classifier.keras")
    >>> albert_tf.AlbertClassifier(config, 3).save(path)
    >>> model = albert_tf.load_model(path)
    >>> type(model).__name__, model.num_labels
    ('AlbertClassifier', 3)
    >>> model({"input_ids": np.array([[2, 10, 11, 3]])})["probabilities"].shape
    TensorShape([1, 3])
    """
    # deferred: keeps TensorFlow off this module's import
    import keras

    register_keras_classes()
    with fileio.local_copy(path) as local:  # any filesystem: Keras reads a local copy
        return keras.saving.load_model(local, **kwargs)
