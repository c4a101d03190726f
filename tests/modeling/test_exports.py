"""Keras' own model.export (SavedModel and LiteRT) of every task model, no signature given."""

import keras
import numpy as np
import pytest
from repo_paths import FIXTURES
import tensorflow as tf

from albert_tf import AlbertClassifier, AlbertMultipleChoice, AlbertSquadV1, AlbertSquadV2
from albert_tf.core.config import AlbertConfig
from albert_tf.modeling.albert_model import AlbertModel, AlbertPretrainer
from albert_tf.modeling.model_base import flat_outputs

CONFIG = AlbertConfig.from_json_file(FIXTURES / "albert_tiny" / "albert_config.json")
MODELS = {
    "encoder": lambda: AlbertModel(CONFIG),
    "pretrainer": lambda: AlbertPretrainer(CONFIG),
    "classifier": lambda: AlbertClassifier(CONFIG, 3),
    "multiple_choice": lambda: AlbertMultipleChoice(CONFIG, num_choices=3),
    "squad_v1": lambda: AlbertSquadV1(CONFIG),
    "squad_v2": lambda: AlbertSquadV2(CONFIG, start_n_top=2, end_n_top=3),
}


def features(model, batch=2, length=10, seed=0):
    """Random int32 features with padding, shaped as the model's records are."""
    rng = np.random.default_rng(seed)
    if isinstance(model, AlbertMultipleChoice):
        length *= model.num_choices  # Google's flattened [B, C·L] records
    f = {
        "input_ids": rng.integers(0, CONFIG.vocab_size, (batch, length)),
        "input_mask": np.ones((batch, length)),
        "segment_ids": np.zeros((batch, length)),
    }
    f["input_mask"][0, -3:] = 0
    f["segment_ids"][:, length // 2 :] = 1
    if isinstance(model, AlbertPretrainer):
        f["masked_lm_positions"] = rng.integers(0, length, (batch, 4))
    if isinstance(model, AlbertSquadV2):
        f["p_mask"] = rng.random((batch, length)) < 0.3
    return {k: tf.constant(v, tf.int32) for k, v in f.items()}


def assert_close(got, want):
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(
            np.asarray(got[name]), np.asarray(want[name]), atol=1e-5, rtol=0, err_msg=name
        )


@pytest.mark.backends  # on JAX through jax2tf
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_saved_model_export_serves_like_python(kind, tmp_path):
    if kind == "squad_v2" and keras.backend.backend() == "jax":
        pytest.skip(
            "JAX 0.10 lowers top_k to a StableHLO composite that TensorFlow 2.21's "
            "XlaCallModule cannot read back"
        )
    model = MODELS[kind]()
    model.export(tmp_path / "sm", verbose=False)
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    serve = loaded.serve
    _, spec = loaded.signatures["serve"].structured_input_signature
    assert sorted(spec) == sorted(features(model))
    assert all(s.dtype == tf.int32 and s.shape.as_list() == [None, None] for s in spec.values())
    for batch, length in ((2, 10), (3, 7)):  # any batch and length, not the traced ones
        f = features(model, batch, length, seed=length)
        assert_close(serve(f), flat_outputs(model(f, training=False)))


def _interpreter(path):
    """LiteRT's interpreter (ai-edge-litert), else the one TensorFlow still ships."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        Interpreter = tf.lite.Interpreter
    return Interpreter(model_path=str(path))


@pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")
def test_litert_export_runs_with_builtin_ops(tmp_path):
    if not hasattr(getattr(tf, "lite", None), "TFLiteConverter"):
        pytest.skip("this TensorFlow has no tf.lite.TFLiteConverter (Keras' LiteRT exporter)")
    model = MODELS["classifier"]()
    model.export(tmp_path / "m.tflite", format="litert", verbose=False)
    # the plain interpreter has no Flex delegate: this fails if any op fell back to TF ops
    runner = _interpreter(tmp_path / "m.tflite").get_signature_runner("serving_default")
    f = features(model)
    got = runner(**{k: v.numpy() for k, v in f.items()})
    assert_close(got, flat_outputs(model(f, training=False)))
