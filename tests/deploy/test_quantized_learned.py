"""Quantized LiteRT files of a classifier that has learned its data (the tiny model fitted to
the SST-2 sample: conftest's `learned_classifier`) decide as the float32 model does; the
drivers' warning when a file does not."""

import types

from conftest import LEARNED_LENGTH
from deploy_helpers import CONFIG, attention_score_dtypes, random_features
import numpy as np
import pytest

import albert_tf
from albert_tf import export_litert, load_litert
from albert_tf.deploy import exports, quantization
from albert_tf.drivers.exports import export_fn_for
from albert_tf.engine.run_summary import RunSummary
from albert_tf.modeling.transformer import traced_mask_adder

# largest probability change allowed, 5-15x what was measured on this model (150 steps: float16
# 7e-7, dynamic int8 8.5e-6, int8 8.9e-5 with only the weight matmuls int8; 300 steps, as in
# docs/deployment.md: 6e-7, 1.9e-6, 4.5e-5; 1.8e-3 for the all-int8 file before)
LEARNED_TOLERANCE = {"float16": 1e-5, "dynamic_int8": 1e-4, "int8": 5e-4}


def _lite_outputs(path, feats):
    lite = load_litert(path)
    rows = [
        lite(**{k: v[i : i + 1] for k, v in feats.items()}) for i in range(len(feats["input_ids"]))
    ]
    return {"probabilities": np.concatenate([np.asarray(r["probabilities"]) for r in rows])}


@pytest.fixture(scope="module")
def learned_file(learned_classifier, tmp_path_factory):
    """`learned_file(quantize)`: the learned classifier's LiteRT file in that mode (int8
    calibrated on all 50 sentences), converted once per module."""
    model, feats, labels = learned_classifier
    folder, made = tmp_path_factory.mktemp("learned"), {}

    def get(quantize):
        if quantize not in made:
            calibration = [{k: v[i] for k, v in feats.items()} for i in range(len(labels))]
            made[quantize] = export_litert(
                model,
                folder / f"{quantize}.tflite",
                max_seq_length=LEARNED_LENGTH,
                quantize=quantize,
                representative_dataset=calibration if quantize == "int8" else None,
            )
        return made[quantize]

    return get


@pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")
@pytest.mark.parametrize("quantize", sorted(LEARNED_TOLERANCE))
def test_quantized_file_keeps_what_the_model_learned(learned_classifier, learned_file, quantize):
    model, feats, labels = learned_classifier
    want = {"probabilities": np.asarray(model(feats, training=False)["probabilities"])}
    assert np.mean(want["probabilities"].argmax(-1) == labels) == 1.0  # it has learned
    out = learned_file(quantize)
    got = _lite_outputs(out.path, feats)
    report = quantization.compare_outputs("classifier", want, got, feats["input_mask"])
    assert report["agreement"] >= quantization.AGREEMENT_FLOOR, report
    assert np.mean(got["probabilities"].argmax(-1) == labels) == 1.0, report
    assert report["max_probability_change"] <= LEARNED_TOLERANCE[quantize], report
    assert quantization.agreement_warning({"quantize": quantize, **report}) is None
    # the export leaves the Keras model's own (Google's -10000) mask as it was
    again = np.asarray(model(feats, training=False)["probabilities"])
    np.testing.assert_array_equal(again, want["probabilities"])


def _matmul_operands(path):
    """The dtypes of the inputs and weights of a file's FULLY_CONNECTED ops."""
    from ai_edge_litert.interpreter import Interpreter

    lite = Interpreter(model_path=str(path))
    dtypes = {d["index"]: np.dtype(d["dtype"]).name for d in lite.get_tensor_details()}
    return {
        dtypes[i]
        for op in lite._get_ops_details()
        if op["op_name"] == "FULLY_CONNECTED"
        for i in op["inputs"][:2]
    }


@pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")
def test_int8_attention_scores_stay_float(learned_classifier, learned_file):
    """The scores plus mask of an int8 file are float32 (quantization.INT8_FLOAT_OPS): in int8
    they shared one range with the mask (Google's -10000 made its step 39, every real score one
    integer), and their int8 BATCH_MATMUL and SOFTMAX ran outside XNNPACK."""
    model = learned_classifier[0]
    path = learned_file("int8").path
    scores = attention_score_dtypes(path, CONFIG.num_attention_heads, LEARNED_LENGTH)
    assert scores == ["float32"] * model.config.num_hidden_layers
    assert _matmul_operands(path) == {"int8"}  # the weight matmuls stay int8 x int8


@pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")
def test_squad_v2_s_int8_file_keeps_its_scores_float(tmp_path):
    """The SQuAD 2.0 model's int8 file (the same encoder, with p_mask): the scores stay float.
    Every other task kind's int8 file is checked so in test_quantized_learned_kinds.py."""
    model = albert_tf.AlbertSquadV2(CONFIG, start_n_top=2, end_n_top=3)
    length = 16
    names = ("input_ids", "input_mask", "segment_ids", "p_mask")
    calibration = [random_features({n: [1, length] for n in names}, seed) for seed in range(4)]
    out = export_litert(
        model,
        tmp_path / "q.tflite",
        max_seq_length=length,
        quantize="int8",
        representative_dataset=calibration,
    )
    scores = attention_score_dtypes(out.path, CONFIG.num_attention_heads, length)
    assert scores == ["float32"] * CONFIG.num_hidden_layers


def test_the_exported_adder_changes_no_float_output(learned_classifier):
    model, feats, _ = learned_classifier
    google = np.asarray(model(feats, training=False)["probabilities"])
    with traced_mask_adder(quantization.INT8_MASK_ADDER):
        exported = np.asarray(model(feats, training=False)["probabilities"])
    np.testing.assert_allclose(exported, google, atol=1e-6, rtol=0)


def test_the_driver_warns_of_a_file_that_decides_unlike_the_model(monkeypatch, tmp_path):
    """A quantization report under the floor: a `warning:` line with the figures, and the
    export function carries it to the run's closing summary."""
    report = {
        "quantize": "float16",
        "split": "dev",
        "examples": 50,
        "agreement": 0.5,
        "max_probability_change": 0.99,
        "max_abs_difference": 0.99,
        "metrics": {
            "keras_float32": {"eval_accuracy": 1.0},
            "litert_float16": {"eval_accuracy": 0.5},
        },
    }
    monkeypatch.setattr(exports, "quantization_report", lambda *a, **k: dict(report))
    logged = []
    monkeypatch.setattr(exports.logging, "warning", lambda f, *a: logged.append(f % a))
    task = types.SimpleNamespace(max_seq_length=16)
    model = albert_tf.AlbertClassifier(CONFIG, 2)
    options = exports.ExportOptions(str(tmp_path / "export"), formats="litert", quantize="float16")
    export_fn = export_fn_for(exports.exporter(None, task, options))
    folder = export_fn(model)
    assert len(export_fn.warnings) == 1 and export_fn.warnings[0] in logged
    line = export_fn.warnings[0]
    assert (
        "float16" in line and "50%" in line and "0.99" in line and "eval_accuracy 1 → 0.5" in line
    )
    summary = RunSummary(str(tmp_path), "run_classifier.py")
    summary.warnings += export_fn.warnings
    assert summary.lines()[-1] == f"warning: {line}"
    assert summary.to_dict()["warnings"] == [line]
    assert (tmp_path / "export").exists() and folder


def test_the_exported_adder_reaches_a_strategy_s_threads():
    """A driver traces its model inside a tf.distribute strategy, whose replica calls run in
    threads of their own: the adder must be the exported one there too (a context variable
    was not, and the driver's int8 file kept -10000)."""
    import threading

    from albert_tf.modeling.transformer import attention_mask_adder

    seen = []
    mask = np.array([[1, 0]], np.int32)
    with traced_mask_adder(quantization.INT8_MASK_ADDER):
        worker = threading.Thread(target=lambda: seen.append(attention_mask_adder(mask, "float32")))
        worker.start()
        worker.join()
    np.testing.assert_array_equal(np.asarray(seen[0]).reshape(-1), [0.0, -100.0])
    np.testing.assert_array_equal(
        np.asarray(attention_mask_adder(mask, "float32")).reshape(-1), [0.0, -10000.0]
    )
