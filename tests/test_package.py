"""The package surface: lazy exports resolve, the backend is TensorFlow."""

import os

import albert_tf


def test_every_export_resolves():
    for name in albert_tf.__all__:
        assert getattr(albert_tf, name) is not None, name


def test_backend_is_tensorflow():
    import keras

    assert os.environ["KERAS_BACKEND"] == "tensorflow" and keras.backend.backend() == "tensorflow"
