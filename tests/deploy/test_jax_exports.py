"""Exports from a JAX process (issue 39 §5): a driver's --export_dir and the converter write, from
KERAS_BACKEND=jax, the files a TensorFlow run writes (the raw-text SavedModel, LiteRT with Task
Library metadata, ONNX), through a TensorFlow process the project starts itself. The driver runs
are JAX subprocesses, so they run in the TensorFlow suite; the converter's test is marked
`backends` (CI runs it again on JAX). Each starts from a full task model in Google's TF1 format
written here, so the files are compared with that very Keras model."""

import os
import pathlib
import sys
import types

import numpy as np
import pytest
import python_processes
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.core import fileio
from albert_tf.core.errors import TrainingError
from albert_tf.deploy.runtime import load_litert
from albert_tf.deploy.tflite_model import read_metadata
from albert_tf.drivers.tensorflow_export import exporter_in_tensorflow
from albert_tf.formats.tf1 import load_original_checkpoint, save_original_checkpoint
from albert_tf.interop.model_files import convert_model
from albert_tf.modeling.finetuning_models import AlbertClassifier
from albert_tf.modeling.squad_models import AlbertSquadV2
from albert_tf.tasks.classification.task import example_to_record
from albert_tf.tasks.glue.task import GlueTask
from albert_tf.text.encoding import TextEncoder

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[2])
LENGTH = 32
FEATURES = ("input_ids", "input_mask", "segment_ids")


def _jax(args, cwd=ROOT):
    """`python ARGS` on Keras' JAX backend: (exit code, stdout, stderr)."""
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=ROOT)
    r = python_processes.run(
        [sys.executable, *map(str, args)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return r.returncode, r.stdout, r.stderr


def _full_model(model, fixtures_dir, path):
    """`model` with the tiny encoder and its own freshly initialised head, saved whole as a
    TF1 checkpoint at `path` (what a driver's --init_checkpoint then loads entirely)."""
    load_original_checkpoint(model, fixtures_dir / "albert_tiny" / "model.ckpt-best")
    save_original_checkpoint(model, str(path))
    return model


def _classifier_command(fixtures_dir, data_dir, checkpoint, out, *extra):
    tiny = fixtures_dir / "albert_tiny"
    return [
        os.path.join(ROOT, "run_classifier.py"),
        "--task_name=sst-2",
        f"--data_dir={data_dir}",
        f"--albert_config_file={tiny / 'albert_config.json'}",
        f"--init_checkpoint={checkpoint}",
        f"--spm_model_file={fixtures_dir / 'spm.model'}",
        f"--output_dir={out / 'out'}",
        f"--cached_dir={out / 'cache'}",
        f"--max_seq_length={LENGTH}",
        f"--export_dir={out / 'export'}",
        *extra,
    ]


@pytest.fixture(scope="module")
def classifier(fixtures_dir, tmp_path_factory):
    """An SST-2 classifier (TensorFlow here) and its TF1 checkpoint."""
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    path = tmp_path_factory.mktemp("classifier") / "model.ckpt"
    return _full_model(AlbertClassifier(config, 2), fixtures_dir, path), path


@pytest.fixture(scope="module")
def dev_features(fixtures_dir, data_dir, tmp_path_factory):
    """(texts, features) of the first 6 SST-2 dev examples, as the driver's records hold them."""
    encoder = TextEncoder.from_files(str(fixtures_dir / "spm.model"), do_lower_case=True)
    task = GlueTask("sst-2", str(data_dir), encoder, LENGTH, str(tmp_path_factory.mktemp("c")))
    dev = task.examples("dev")[:6]
    records = [
        example_to_record(e, task.processor.label_map(), encoder, LENGTH, False) for e in dev
    ]
    features = {k: np.array([r[k] for r in records], np.int32) for k in FEATURES}
    return [e.text_a for e in dev], features


@pytest.fixture(scope="module")
def jax_export(classifier, fixtures_dir, data_dir, tmp_path_factory):
    """One run_classifier.py export on JAX (no training: the weights are the checkpoint's,
    as the JAX process holds them) in all three formats."""
    out = tmp_path_factory.mktemp("jax_export")
    cmd = _classifier_command(
        fixtures_dir, data_dir, classifier[1], out, "--export_format=saved_model,litert,onnx"
    )
    code, stdout, stderr = _jax(cmd)
    assert code == 0, stderr[-3000:]
    (version,) = os.listdir(out / "export")
    return out / "export" / version, stdout, stderr


def test_a_jax_run_exports_in_a_tensorflow_process(jax_export):
    folder, stdout, stderr = jax_export
    assert "in a TensorFlow process" in stderr
    assert {"saved_model.pb", "model.tflite", "model.onnx", "README.md"} <= set(os.listdir(folder))
    assert f"{folder}  " in stdout  # the closing summary lists the version folder
    assert "error:" not in stderr


def test_the_raw_text_saved_model_equals_the_keras_model(jax_export, classifier, dev_features):
    import tensorflow_text  # noqa: F401  registers the tf-text ops the signature uses

    texts, features = dev_features
    serve = tf.saved_model.load(str(jax_export[0])).signatures["serving_default"]
    got = serve(text_a=tf.constant(texts))["probabilities"].numpy()
    want = classifier[0](features, training=False)["probabilities"]
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_the_litert_file_has_task_library_metadata_and_equals_keras(
    jax_export, classifier, dev_features
):
    path = str(jax_export[0] / "model.tflite")
    metadata, files = read_metadata(fileio.read_bytes(path))
    assert metadata is not None and files["labels.txt"] == b"0\n1\n"  # BertNLClassifier's
    runner = load_litert(path)
    _, features = dev_features
    want = classifier[0](features, training=False)["probabilities"]
    for i in range(len(want)):
        got = runner(**{k: v[i : i + 1] for k, v in features.items()})["probabilities"]
        np.testing.assert_allclose(np.reshape(got, -1), want[i], atol=1e-4)


def test_the_onnx_file_equals_the_keras_model(jax_export, classifier, dev_features):
    import onnxruntime

    _, features = dev_features
    session = onnxruntime.InferenceSession(str(jax_export[0] / "model.onnx"))
    (got,) = session.run(["probabilities"], features)
    want = classifier[0](features, training=False)["probabilities"]
    np.testing.assert_allclose(got, want, atol=1e-4)


@pytest.mark.backends  # CI's JAX pass: there a TensorFlow process writes the file
def test_the_converter_writes_the_same_onnx_on_either_backend(classifier, fixtures_dir, tmp_path):
    """`convert --output x.onnx` (convert_model): on JAX, whose own tracing of the model fails
    in tf2onnx, the file comes from a TensorFlow process; it equals the Keras model."""
    output = tmp_path / "classifier.onnx"
    lines = []
    convert_model(
        classifier[1],
        output,
        albert_config_file=fixtures_dir / "albert_tiny" / "albert_config.json",
        model_kind="classifier",
        log=lines.append,
    )
    assert lines == [f"wrote {output}"]
    import onnxruntime

    ids = np.array([[2, 10, 11, 12, 3, 0]], np.int32)
    features = {"input_ids": ids, "input_mask": np.sign(ids), "segment_ids": np.zeros_like(ids)}
    (got,) = onnxruntime.InferenceSession(str(output)).run(["logits"], features)
    want = np.asarray(classifier[0](features)["logits"])
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_squad_v2_exports_its_saved_model_from_jax(fixtures_dir, tmp_path):
    """JAX's own SavedModel of AlbertSquadV2 (jax2tf) does not load in TensorFlow 2.21 (its
    beam's top_k); the export in a TensorFlow process does, with the JAX process's weights."""
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    model = _full_model(AlbertSquadV2(config), fixtures_dir, tmp_path / "squad.ckpt")
    code, _, stderr = _jax(
        [
            os.path.join(ROOT, "run_squad.py"),
            "--version_2_with_negative",
            f"--albert_config_file={fixtures_dir / 'albert_tiny' / 'albert_config.json'}",
            f"--init_checkpoint={tmp_path / 'squad.ckpt'}",
            f"--spm_model_file={fixtures_dir / 'spm.model'}",
            f"--output_dir={tmp_path / 'out'}",
            "--max_seq_length=64",
            "--doc_stride=32",
            "--max_query_length=16",
            f"--export_dir={tmp_path / 'export'}",
        ]
    )
    assert code == 0, stderr[-3000:]
    import tensorflow_text  # noqa: F401  registers the tf-text ops the signature uses

    from albert_tf.tasks.serving import latest_export

    loaded = tf.saved_model.load(latest_export(tmp_path / "export"))
    answer = loaded.signatures["serving_default"](
        question=tf.constant(["who wrote the list?"]),
        context=tf.constant(["The list was written by the module author in 1990."]),
    )
    assert {"answer_text", "score", "null_score"} <= set(answer)
    folder = latest_export(tmp_path / "export")
    reader = tf.train.load_checkpoint(os.path.join(folder, "variables", "variables"))
    exported = sorted(
        float(np.sum(np.abs(reader.get_tensor(name))))
        for name, dtype in reader.get_variable_to_dtype_map().items()
        if dtype == tf.float32
    )
    weights = [np.asarray(w) for w in model.weights if w.dtype == "float32"]
    keras = sorted(float(np.sum(np.abs(w))) for w in weights)
    np.testing.assert_allclose(exported, keras, rtol=1e-6)  # the very weights, every one


def test_a_failing_tensorflow_process_is_one_error_and_leaves_no_version(
    classifier, fixtures_dir, data_dir, tmp_path, monkeypatch
):
    """The TensorFlow process's ONNX writer fails (a tf2onnx that breaks on import, first on
    its PYTHONPATH): one TrainingError line naming the format, and no version folder."""
    fake = tmp_path / "fake" / "tf2onnx"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise RuntimeError('tf2onnx broke on import')\n")
    monkeypatch.setenv("PYTHONPATH", f"{fake.parent}{os.pathsep}{ROOT}")
    argv = _classifier_command(
        fixtures_dir, data_dir, classifier[1], tmp_path, "--export_format=saved_model,onnx"
    )
    flags = types.SimpleNamespace(
        export_dir=str(tmp_path / "export"),
        output_dir=str(tmp_path / "out"),
        cached_dir=str(tmp_path / "cache"),
        verbose_errors=False,
    )
    with pytest.raises(TrainingError) as e:
        exporter_in_tensorflow(flags, argv)(classifier[0])
    message = str(e.value)
    assert "\n" not in message
    assert "--export_format=onnx: the export failed" in message and "tf2onnx broke" in message
    assert not (tmp_path / "export").exists()
