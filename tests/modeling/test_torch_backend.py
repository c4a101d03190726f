"""Keras' torch backend (KERAS_BACKEND=torch): albert_tf's models run their forward pass and
`predict` there with TensorFlow's outputs; training, exports and the commands are refused with
one error naming KERAS_BACKEND (docs/backends.md).

CI does not install torch: the cross-backend test below runs wherever torch imports and is
skipped otherwise. The tests marked `torch` (here, tests/modeling/test_modeling.py and
test_task_model_parity.py) are the ones meant for a torch process:
`KERAS_BACKEND=torch python -m pytest -m torch tests/modeling`."""

import importlib.util
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from repo_paths import FIXTURES
from task_outputs import models, outputs

from albert_tf import (
    AlbertClassifier,
    AlbertConfig,
    export_litert,
    load_original_checkpoint,
    save_original_checkpoint,
)
from albert_tf.core.errors import InputError
from albert_tf.drivers import cli

ROOT = FIXTURES.parents[2]
ON_TORCH = keras.backend.backend() == "torch"
REFUSAL = r"needs KERAS_BACKEND=tensorflow \(the default\) or jax; .* KERAS_BACKEND=torch"


def tiny_classifier():
    config = AlbertConfig.from_json_file(FIXTURES / "albert_tiny" / "albert_config.json")
    return AlbertClassifier(config, 2)


@pytest.mark.backends
@pytest.mark.torch
def test_predict_equals_the_call_for_every_model_class():
    """`predict` (batches of 2, NumPy out) gives Google's encoder outputs and what calling the
    model gives, at 1e-5."""
    config = AlbertConfig.from_json_file(FIXTURES / "albert_tiny" / "albert_config.json")
    google = dict(np.load(FIXTURES / "albert_tiny_reference.npz"))
    predicted = outputs(FIXTURES)
    assert {k.split("/")[0] for k in predicted} == set(models(config))
    encoder, _ = models(config)["encoder"]
    load_original_checkpoint(encoder, FIXTURES / "albert_tiny" / "model.ckpt-best")
    called = encoder({k: google[k] for k in ("input_ids", "input_mask", "segment_ids")})
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(predicted[f"encoder/{key}"], google[key], atol=1e-5, rtol=0)
        ours = keras.ops.convert_to_numpy(called[key])
        np.testing.assert_allclose(predicted[f"encoder/{key}"], ours, atol=1e-5, rtol=0)


@pytest.mark.torch
@pytest.mark.skipif(not ON_TORCH, reason="the refusals of KERAS_BACKEND=torch")
def test_exports_and_commands_are_refused_on_torch(tmp_path, capsys):
    model = tiny_classifier()
    with pytest.raises(InputError, match=r"export\(format='tf_saved_model'\) " + REFUSAL):
        model.export(str(tmp_path / "saved_model"))
    with pytest.raises(InputError, match="export_litert " + REFUSAL):
        export_litert(model, str(tmp_path / "m.tflite"), max_seq_length=8)
    with pytest.raises(SystemExit) as exit_info:
        cli.run(lambda argv: 0, argv=["run_classifier.py"], usage=cli.Usage("demo"))
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: run_classifier.py needs KERAS_BACKEND=tensorflow")


@pytest.mark.skipif(ON_TORCH, reason="this process is the torch one")
@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed (CI does not install it; `pip install torch` runs this)",
)
def test_a_torch_process_predicts_what_tensorflow_predicts(tmp_path):
    """Every model class's `predict` in a KERAS_BACKEND=torch process equals this process's at
    1e-5 (and the encoder Google's reference); a driver there ends in one `error:` line."""
    env = dict(os.environ, KERAS_BACKEND="torch", PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    script = ROOT / "tests" / "modeling" / "task_outputs.py"
    out = tmp_path / "torch.npz"
    done = subprocess.run(
        [sys.executable, str(script), str(out)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    theirs, ours = dict(np.load(out)), outputs(FIXTURES)
    assert sorted(theirs) == sorted(ours)
    for key, value in ours.items():
        if key.endswith("_index"):  # the SQuAD v2 beam's positions
            np.testing.assert_array_equal(theirs[key], value, err_msg=key)
        else:
            np.testing.assert_allclose(theirs[key], value, atol=1e-5, rtol=0, err_msg=key)
    driver = subprocess.run(
        [sys.executable, str(ROOT / "run_classifier.py"), "--task_name=cola"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert driver.returncode == 2
    assert (
        driver.stderr.strip()
        .splitlines()[-1]
        .startswith("error: run_classifier.py needs KERAS_BACKEND=tensorflow (the default) or jax")
    )


@pytest.mark.backends
@pytest.mark.torch
def test_a_tf1_checkpoint_written_on_this_backend_loads_back(tmp_path):
    """save_original_checkpoint reads any backend's variables (torch's carry gradients)."""
    model, fresh = tiny_classifier(), tiny_classifier()
    rng = np.random.default_rng(0)
    for variable in model.weights:
        variable.assign(rng.normal(0, 0.2, variable.shape).astype("float32"))
    prefix = save_original_checkpoint(model, str(tmp_path / "model.ckpt"))
    report = load_original_checkpoint(fresh, prefix)
    assert report.missing == [] and report.unused == []
    for a, b in zip(model.weights, fresh.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(b), keras.ops.convert_to_numpy(a))
