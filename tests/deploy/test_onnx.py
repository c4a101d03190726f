"""albert_tf.export_onnx: every ids-level model kind runs in ONNX Runtime as in Keras (≤1e-4) at
any batch and length, the optimized (fused) graph equals the plain one, any filesystem, the
converter's `--output_format onnx`, and one clear error for what cannot be exported."""

import json
import os
import re

import keras
import numpy as np
import pytest

tf2onnx = pytest.importorskip("tf2onnx")
ort = pytest.importorskip("onnxruntime")

from albert_tf import (  # noqa: E402  (after the optional packages are known to be there)
    AlbertClassifier,
    AlbertConfig,
    AlbertModel,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertSquadV1,
    AlbertSquadV2,
    AlbertTokenClassifier,
    export_onnx,
)
from albert_tf.core import fileio  # noqa: E402
from albert_tf.modeling.model_base import flat_outputs  # noqa: E402

CONFIG = AlbertConfig(
    vocab_size=100,
    embedding_size=8,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=32,
)
MODELS = {
    "encoder": lambda: AlbertModel(CONFIG),
    "pretrainer": lambda: AlbertPretrainer(CONFIG),
    "classifier": lambda: AlbertClassifier(CONFIG, 3),
    "multi_label": lambda: AlbertClassifier(CONFIG, 4, multi_label=True),
    "regression": lambda: AlbertClassifier(CONFIG, 1, is_regression=True),
    "token_classifier": lambda: AlbertTokenClassifier(CONFIG, 5),
    "squad_v1": lambda: AlbertSquadV1(CONFIG),
    "squad_v2": lambda: AlbertSquadV2(CONFIG, start_n_top=2, end_n_top=3),
    "multiple_choice": lambda: AlbertMultipleChoice(CONFIG, num_choices=3),
}


def build(kind, seed=0):
    """A model with random weights everywhere (biases and LayerNorm too, as in a trained model:
    a zero bias is folded away by the converter, which would hide a fusion pattern)."""
    model = MODELS[kind]()
    rng = np.random.default_rng(seed)
    for v in model.weights:
        base = 1.0 if "gamma" in v.path else 0.0
        v.assign((base + 0.1 * rng.standard_normal(v.shape)).astype("float32"))
    return model


def features(model, batch, length, seed=0):
    """Random int32 features with padding, as the model's records are."""
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
    return {k: v.astype(np.int32) for k, v in f.items()}


def session(path):
    return ort.InferenceSession(fileio.read_bytes(path), providers=["CPUExecutionProvider"])


def run(sess, f):
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, f)))


def assert_close(got, want, atol=1e-4):
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(got[name], np.asarray(want[name]), atol=atol, err_msg=name)


@pytest.fixture(scope="module")
def plain_export(tmp_path_factory):
    """`plain_export(kind)`: (model, its ONNX file) of `build(kind)`, converted once per module
    (the kind's test and the fused graph's test read the same file)."""
    folder, made = tmp_path_factory.mktemp("onnx"), {}

    def get(kind):
        if kind not in made:
            model = build(kind)
            made[kind] = model, export_onnx(model, folder / f"{kind}.onnx")
        return made[kind]

    return get


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_every_model_kind_equals_keras_at_any_batch_and_length(kind, plain_export):
    model, path = plain_export(kind)
    sess = session(path)
    inputs = {i.name: i for i in sess.get_inputs()}
    assert sorted(inputs) == sorted(model.serving_features)
    assert all(i.type == "tensor(int32)" for i in inputs.values())
    assert inputs["input_ids"].shape == ["batch", "sequence"]
    for batch, length in ((2, 10), (3, 7)):
        f = features(model, batch, length, seed=length)
        assert_close(run(sess, f), flat_outputs(model(f, training=False)))


@pytest.mark.parametrize("kind", ["classifier", "squad_v2"])
def test_optimized_graph_is_fused_and_equals_the_plain_one(kind, plain_export, tmp_path):
    model, path = plain_export(kind)
    plain = session(path)
    fused = session(export_onnx(model, tmp_path / "fused.onnx", optimize=True))
    counts = json.loads(fused.get_modelmeta().custom_metadata_map["albert_tf.fused"])
    applications = CONFIG.num_hidden_layers * CONFIG.inner_group_num
    assert counts["Attention"] == applications and counts["FastGelu"] == applications
    assert counts["SkipLayerNormalization"] == 2 * applications + 1  # + the embedding's
    for batch, length in ((1, 12), (4, 5)):
        f = features(model, batch, length, seed=batch)
        want = run(plain, f)
        assert_close(run(fused, f), want, atol=1e-5)
        assert_close(want, flat_outputs(model(f, training=False)))


def test_written_to_any_filesystem_whole(ram_bucket):
    model = build("classifier")
    path = f"{ram_bucket}/exports/model.onnx"
    assert export_onnx(model, path) == path
    assert fileio.listdir(f"{ram_bucket}/exports") == ["model.onnx"]  # no temporary left over
    f = features(model, 2, 6)
    assert_close(run(session(path), f), flat_outputs(model(f, training=False)))


def test_what_cannot_be_exported_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"^opset: 13 .* use 17"):
        export_onnx(build("encoder"), tmp_path / "a.onnx", opset=13)
    with pytest.raises(ValueError, match=r"^model: export_onnx writes albert_tf's ids-level"):
        export_onnx(keras.Sequential([keras.layers.Dense(2)]), tmp_path / "b.onnx")
    with pytest.raises(ValueError, match=r"^path: empty"):
        export_onnx(build("encoder"), "")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_path_and_a_missing_optimizer_package_are_named(tmp_path, monkeypatch):
    """export_onnx into an existing folder names the folder; optimize=True without sympy
    (ONNX Runtime's optimizer imports it) names sympy, before any conversion."""
    import sys

    with pytest.raises(ValueError, match="^" + re.escape(f"path: {tmp_path} is a folder")):
        export_onnx(build("encoder"), tmp_path)
    monkeypatch.setitem(sys.modules, "sympy", None)
    with pytest.raises(ImportError, match=r"^export_onnx\(optimize=True\) needs sympy"):
        export_onnx(build("encoder"), tmp_path / "o.onnx", optimize=True)
    assert list(tmp_path.iterdir()) == []


def test_convert_cli_writes_onnx_and_prints_no_native_lines(tmp_path, fixtures_dir):
    """`python -m albert_tf.convert --output_format onnx` as a shell runs it (TensorFlow's INFO
    lines on): it says what it wrote, prints no grappler "Starting new session", and the file
    serves the encoder's outputs."""
    import subprocess
    import sys

    out = tmp_path / "tiny.onnx"
    argv = ["--input", str(fixtures_dir / "albert_tiny"), "--output", str(out)]
    r = subprocess.run(
        [sys.executable, "-m", "albert_tf.convert", *argv, "--output_format", "onnx"]
        + ["--model", "encoder"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"wrote {out}" in r.stdout
    assert "single_machine" not in r.stderr and "eligible GPUs" not in r.stderr, r.stderr
    sess = session(out)
    outputs = [o.name for o in sess.get_outputs()]
    assert "sequence_output" in outputs and "pooled_output" in outputs
    f = {"input_ids": np.array([[2, 10, 11, 3]], np.int32)}
    f.update(input_mask=np.ones_like(f["input_ids"]), segment_ids=np.zeros_like(f["input_ids"]))
    assert run(sess, f)["sequence_output"].shape == (1, 4, 32)
