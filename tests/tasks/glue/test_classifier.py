"""GLUE fine-tuning: run_classifier.py end to end, the raw-text SavedModel, a run that learns."""

import os
import pathlib
import random
import sys

import keras
import numpy as np
import pytest
import python_processes
import tensorflow as tf

from albert_tf import AlbertConfig, load_original_checkpoint
from albert_tf.engine.finetuning import records_dataset
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.tasks.classification.task import classifier_model_fn
from albert_tf.tasks.glue.task import GlueTask, run_glue
from albert_tf.text.encoding import TextEncoder

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[3])


@pytest.fixture(scope="module")
def encoder(fixtures_dir):
    return TextEncoder.from_files(str(fixtures_dir / "spm.model"), do_lower_case=True)


def test_run_classifier_end_to_end_and_saved_model(fixtures_dir, data_dir, tmp_path, encoder):
    out, export = tmp_path / "out", tmp_path / "export"
    tiny = fixtures_dir / "albert_tiny"
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_classifier.py"),
        "--task_name=MRPC",
        f"--data_dir={data_dir}",
        f"--albert_config_file={tiny / 'albert_config.json'}",
        f"--init_checkpoint={tiny / 'model.ckpt-best'}",
        f"--spm_model_file={fixtures_dir / 'spm.model'}",
        f"--output_dir={out}",
        f"--export_dir={export}",
        "--max_seq_length=64",
        "--train_batch_size=8",
        "--eval_batch_size=8",
        "--predict_batch_size=8",
        "--train_step=6",
        "--warmup_step=1",
        "--save_checkpoints_steps=3",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--learning_rate=1e-4",
    ]
    r = python_processes.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    results = (out / "eval_results.txt").read_text()
    assert results.count("global_step = ") == 2 and "f1 = " in results and "accuracy = " in results
    assert (out / "model.ckpt-best.index").exists()
    submission = (out / "MRPC.tsv").read_text().splitlines()
    assert submission[0] == "index\tprediction" and len(submission) == 51
    assert {line.split("\t")[1] for line in submission[1:]} <= {"0", "1"}
    probs = np.loadtxt(out / "test_results.tsv")
    assert probs.shape == (50, 2) and np.allclose(probs.sum(1), 1, atol=1e-5)

    # The SavedModel on raw strings equals the Python path (tokenizer + packer + Keras model).
    import tensorflow_text  # noqa: F401  registers the tf-text ops the signature uses

    from albert_tf.tasks.serving import latest_export

    serve = tf.saved_model.load(latest_export(export)).signatures["serving_default"]
    task = GlueTask("mrpc", str(data_dir), encoder, 64, str(tmp_path / "cache"))
    dev = task.examples("dev")[:8]
    got = serve(
        text_a=tf.constant([e.text_a for e in dev]), text_b=tf.constant([e.text_b for e in dev])
    )
    config = AlbertConfig.from_json_file(tiny / "albert_config.json")
    model = classifier_model_fn(config, task)()
    load_original_checkpoint(model, out / "model.ckpt-best")
    from albert_tf.tasks.classification.task import example_to_record

    recs = [example_to_record(e, task.processor.label_map(), encoder, 64, False) for e in dev]
    feats = {
        k: np.array([r[k] for r in recs], np.int32)
        for k in ("input_ids", "input_mask", "segment_ids")
    }
    want = model(feats, training=False)["probabilities"]
    np.testing.assert_allclose(got["probabilities"].numpy(), want, atol=1e-5)
    assert [s.decode() for s in got["labels"].numpy()] == [str(int(i)) for i in np.argmax(want, -1)]


def _write_tsv(path, rows):
    path.write_text("".join("\t".join(r) + "\n" for r in rows))


def make_learnable_sst(folder, n_train=400, n_dev=100, seed=0):
    """A tiny SST-2-format task: positive sentences draw their words from one set, negative
    ones from another (one shared word each, so no single position gives it away)."""
    rng = random.Random(seed)
    pos = "value object name function argument expression returned called module class".split()
    neg = "list string number error file line loop statement import keyword".split()

    def row():
        label = rng.randint(0, 1)
        w = rng.sample(pos if label else neg, 6) + ["the"]
        rng.shuffle(w)
        return [" ".join(w), str(label)]

    folder.mkdir(parents=True)
    _write_tsv(folder / "train.tsv", [["sentence", "label"]] + [row() for _ in range(n_train)])
    _write_tsv(folder / "dev.tsv", [["sentence", "label"]] + [row() for _ in range(n_dev)])


def test_fine_tuning_learns_a_small_task(fixtures_dir, tmp_path, encoder):
    make_learnable_sst(tmp_path / "data" / "SST-2")
    task = GlueTask("sst-2", str(tmp_path / "data"), encoder, 32, str(tmp_path / "cache"))
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    opts = FineTuningOptions(
        output_dir=str(tmp_path / "out"),
        init_checkpoint=str(fixtures_dir / "albert_tiny" / "model.ckpt-best"),
        train_batch_size=16,
        eval_batch_size=16,
        learning_rate=1e-3,
        train_step=150,
        warmup_step=10,
        save_checkpoints_steps=75,
        iterations_per_loop=25,
        jit_compile=True,
        verbose=0,
    )
    results = run_glue(config, task, opts, do_train=True, do_eval=True)
    assert results["accuracy"] > 0.9, results  # chance is 0.5


def test_classifier_fits_in_a_notebook(fixtures_dir, data_dir, tmp_path, encoder):
    """AlbertClassifier + compile/fit on a tf.data.Dataset of the feature dicts."""
    from albert_tf.modeling.finetuning_models import AlbertClassifier

    task = GlueTask("rte", str(data_dir), encoder, 64, str(tmp_path))
    path, n = task.records("train")
    ds = records_dataset(path, task.spec, 8, is_training=False, num_records=n)
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    model = AlbertClassifier(config, num_labels=2)
    report = load_original_checkpoint(model, fixtures_dir / "albert_tiny" / "model.ckpt-best")
    assert report.missing == ["output_bias", "output_weights"]
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = model.fit(ds, epochs=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert "accuracy" in history.history


def test_cache_is_keyed_by_max_seq_length(data_dir, tmp_path, encoder):
    a = GlueTask("cola", str(data_dir), encoder, 32, str(tmp_path)).records("dev")
    b = GlueTask("cola", str(data_dir), encoder, 64, str(tmp_path)).records("dev")
    assert a[0] != b[0] and a[1] == b[1] == 50


def test_regression_and_mnli_metrics(fixtures_dir, data_dir, tmp_path, encoder):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    opts = FineTuningOptions(
        output_dir=str(tmp_path / "o"),
        eval_batch_size=8,
        predict_batch_size=8,
        init_checkpoint=str(fixtures_dir / "albert_tiny" / "model.ckpt-best"),
    )
    sts = GlueTask("sts-b", str(data_dir), encoder, 64, str(tmp_path))
    res = run_glue(config, sts, opts, do_eval=True, do_predict=True)
    assert {"pearson", "spearman", "mse"} <= set(res)
    assert (tmp_path / "o" / "STS-B.tsv").exists()
    mnli = GlueTask("mnli", str(data_dir), encoder, 64, str(tmp_path))
    opts.output_dir = str(tmp_path / "m")
    res = run_glue(config, mnli, opts, do_eval=True, do_predict=True)
    assert "mismatched_accuracy" in res and "accuracy" in res
    for name in ("MNLI-m.tsv", "MNLI-mm.tsv", "AX.tsv"):
        assert (tmp_path / "m" / name).exists(), name
