"""The package surface: exports resolve; the backend is TensorFlow unless KERAS_BACKEND says."""

import os
import subprocess
import sys

import pytest
from repo_paths import TEST_DATA

import albert_tf


@pytest.mark.backends
def test_every_export_resolves():
    for name in albert_tf.__all__:
        assert getattr(albert_tf, name) is not None, name


@pytest.mark.parametrize("backend", [None, "jax"])
def test_backend_is_tensorflow_unless_keras_backend_names_another(backend):
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    if backend is not None:
        env["KERAS_BACKEND"] = backend
    env["PYTHONPATH"] = os.pathsep.join([str(TEST_DATA.parent.parent), env.get("PYTHONPATH", "")])
    code = "import albert_tf.modeling.albert_model, keras; print(keras.backend.backend())"
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-1] == (backend or "tensorflow")
