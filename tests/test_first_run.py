"""A first run in one try: what a new user meets, from `--help` to the converted model.

One short run_classifier.py run (MRPC sample, tiny release) is shared by the checks of what it
prints (no TensorFlow banner, one progress display, a closing summary), what it writes
(run_summary.json, labelled eval_results.txt blocks, TensorBoard scalars of a run shorter than
--log_every_steps, an export that loads without warnings) and how its folder converts (with its
head and labels, never with invented weights).
"""

import glob
import json
import os
import pathlib
import re
import subprocess
import sys
import types

from absl import flags
import numpy as np
import pytest
from shared_runs import once_per_test_run

from albert_tf import convert
from albert_tf.drivers.recipes import fit_warmup_to_run
from albert_tf.engine.warmup import scaled_warmup

ROOT = pathlib.Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "fixtures" / "albert_tiny"
BANNER = ("cudart_stub", "cuInit", "absl::InitializeLog", "oneDNN", "cpu_feature_guard")
# the LiteRT converter's and interpreter's C++ lines, from the int8 export
NATIVE_NOISE = ("fully_quantize", "XNNPACK delegate", "ran out of data")


def _python(*args, timeout=600, env=None, cwd=ROOT):
    return subprocess.run(
        [sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def _convert(capsys, *args):
    """`python -m albert_tf.convert ARGS` run in this process (TensorFlow is imported already;
    tests/interop/test_convert.py runs the real process): its exit code and what it printed."""
    capsys.readouterr()
    code = convert.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=out, stderr=err)


@pytest.fixture(scope="module")
def mrpc_run(tmp_path_factory, data_dir):
    """(process, output folder) of one short run_classifier.py run with an export, made once
    per test run (the xdist workers share it)."""

    def make(folder):
        r = _run_classifier(folder / "mrpc", data_dir)
        assert r.returncode == 0, r.stderr[-3000:]
        return {"returncode": r.returncode, "stdout": r.stdout, "stderr": r.stderr}

    result, folder = once_per_test_run(tmp_path_factory, "first_run", make)
    return types.SimpleNamespace(**result), folder / "mrpc"


def _run_classifier(out, data_dir):
    return _python(
        "run_classifier.py",
        "--task_name=MRPC",
        f"--data_dir={data_dir}",
        f"--albert_config_file={TINY / 'albert_config.json'}",
        f"--init_checkpoint={TINY / 'model.ckpt-best'}",
        f"--spm_model_file={TINY / '30k-clean.model'}",
        f"--output_dir={out}",
        f"--export_dir={out / 'export'}",
        "--export_format=saved_model,litert,onnx",
        "--quantize=int8",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--train_step=6",
        "--save_checkpoints_steps=3",
        "--max_seq_length=32",
        "--train_batch_size=8",
    )


def test_the_console_shows_the_run_not_tensorflow(mrpc_run):
    r, out = mrpc_run
    text = r.stdout + r.stderr
    assert not [line for line in text.splitlines() if any(b in line for b in BANNER + NATIVE_NOISE)]
    assert "could not be found in the restored object" not in text
    assert "shuffle=True" not in text and "Epoch 1/" not in text
    assert "training 6/6 steps (100%)" in r.stderr  # one progress display over the whole run
    summary = r.stdout.splitlines()
    assert summary[0].startswith("done in ") and "final eval: accuracy " in r.stdout
    for name in ("model.ckpt-best", "eval_results.txt", "test_results.tsv", "run_summary.json"):
        assert any(line.strip().startswith(str(out / name)) for line in summary), name


def test_run_summary_and_labelled_results(mrpc_run):
    _, out = mrpc_run
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["global_step"] == 6 and summary["metrics"]["accuracy"] >= 0
    assert summary["model"]["class"] == "AlbertClassifier"
    assert summary["model"]["labels"] == ["0", "1"]
    assert {os.path.basename(f["path"]) for f in summary["files"]} >= {
        "model.ckpt-best",
        "eval_results.txt",
        "test_results.tsv",
        "run_summary.json",
        "spm.model",
        # the export's own files, each listed
        "model.tflite",
        "model.onnx",
        "saved_model.pb",
        "quantization_report.json",
    }
    listed = {f["path"] for f in summary["files"]}
    for name in os.listdir(out):  # every file of the folder (a checkpoint by its prefix)
        assert str(out / re.sub(r"\.(index|data-\d+-of-\d+)$", "", name)) in listed, name
    blocks = (out / "eval_results.txt").read_text().split("\n\n")
    titles = [b.splitlines()[0] for b in blocks if b.strip()]
    assert titles[:2] == [
        "***** eval of ckpt-3 (step 3) *****",
        "***** eval of ckpt-6 (step 6) *****",
    ]
    assert titles[-1].startswith("***** final eval of model.ckpt-best")
    assert "global_step = 3\n" in blocks[0]  # an integer in every block, not 3.0


def test_tensorboard_scalars_of_a_run_shorter_than_log_every_steps(mrpc_run):
    import tensorflow as tf

    _, out = mrpc_run
    tags = set()
    for path in tf.io.gfile.glob(str(out / "train" / "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(v.tag for v in event.summary.value)
    assert {"loss", "learning_rate", "steps_per_second"} <= tags


def test_the_export_loads_without_warnings(mrpc_run):
    _, out = mrpc_run
    code = (
        "import albert_tf, sys; m = albert_tf.load_saved_model(sys.argv[1]); "
        "print(sorted(m.signatures))"
    )
    r = _python("-c", code, out / "export", env={"TF_CPP_MIN_LOG_LEVEL": "2"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "custom gradients" not in r.stderr and "serving_default" in r.stdout


def test_the_run_folder_converts_with_its_head_and_labels(mrpc_run, tmp_path, capsys):
    _, out = mrpc_run
    r = _convert(
        capsys,
        "--input",
        out,
        "--output",
        tmp_path / "hf",
        "--output_format",
        "huggingface",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["AlbertForSequenceClassification"]
    assert config["id2label"] == {"0": "0", "1": "1"}
    assert "0 missing" in r.stdout and "0 left out" in r.stdout
    # the run folder records its SentencePiece model; the conversion carries it
    spm = (TINY / "30k-clean.model").read_bytes()
    assert (out / "spm.model").read_bytes() == spm
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == spm


def test_a_fine_tuned_checkpoint_alone_names_its_task_or_fails(mrpc_run, tmp_path, capsys):
    """Outside its run folder the pooled head's task is unknown: one error line, nothing
    written; --model says it."""
    _, out = mrpc_run
    alone = tmp_path / "alone"
    alone.mkdir()
    for name in os.listdir(out):
        if name.startswith("model.ckpt-best"):
            (alone / name).write_bytes((out / name).read_bytes())
    base = [
        "--input",
        alone / "model.ckpt-best",
        "--albert_config_file",
        TINY / "albert_config.json",
        "--output_format",
        "huggingface",
    ]
    r = _convert(capsys, *base, "--output", tmp_path / "hf")
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "--model classifier" in r.stderr and not (tmp_path / "hf").exists()
    r = _convert(capsys, *base, "--output", tmp_path / "hf2", "--model", "classifier")
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_release_to_keras_hub_says_it_leaves_the_sop_head_out(tmp_path, capsys):
    """keras-hub's pretrainer has no sentence-order head: the conversion goes on and says so
    (a pretraining head, not a fine-tuned one)."""
    r = _convert(
        capsys,
        "--input",
        TINY,
        "--output_format",
        "keras_hub",
        "--output",
        tmp_path / "kh",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "no place for cls/seq_relationship/output_bias" in r.stdout


def test_help_starts_with_usage_and_exits_0():
    r = _python("run_classifier.py", "--help", timeout=120)
    assert r.returncode == 0
    assert r.stdout.startswith("Fine-tune ALBERT") and "required: --task_name" in r.stdout
    assert "try it in a clone of albert_tf" in r.stdout and "--helpfull" in r.stdout


def _flag_values(**values):
    fv = flags.FlagValues()
    flags.DEFINE_integer("train_step", 1000, "", flag_values=fv)
    flags.DEFINE_integer("warmup_step", 100, "", flag_values=fv)
    fv(["prog"] + [f"--{k}={v}" for k, v in values.items()])
    return fv


def test_a_default_warmup_adapts_to_a_short_run():
    fv = _flag_values(train_step=20)
    fit_warmup_to_run(fv)
    assert fv.warmup_step == 2  # 100 of 1000 steps: the same tenth of 20
    assert scaled_warmup(200, 800, 5) == 1  # a recipe's quarter, below the run's length


def test_an_explicit_warmup_longer_than_the_run_is_an_error():
    from albert_tf.core.errors import InputError

    fv = _flag_values(train_step=20, warmup_step=50)
    with pytest.raises(InputError, match="--warmup_step=50 exceeds --train_step=20"):
        fit_warmup_to_run(fv)


def test_a_tpu_that_never_answers_ends_in_one_line(tmp_path):
    """An address nothing listens on (loopback): one error line within the stated deadline."""
    r = _python(
        "run_classifier.py",
        "--task_name=MRPC",
        "--data_dir=tests/data/samples",
        f"--albert_config_file={TINY / 'albert_config.json'}",
        f"--spm_model_file={TINY / '30k-clean.model'}",
        f"--output_dir={tmp_path / 'o'}",
        "--do_train",
        "--use_tpu",
        "--tpu=grpc://127.0.0.1:9",
        "--tpu_connect_timeout=5",
        timeout=300,
    )
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 2 and last.startswith("error: ")
    assert "no TPU answered within 5 s" in last or "cannot reach TPU" in last


# ---- the Keras API: labels are checked before any tracing ---------------------------------
@pytest.fixture(scope="module")
def text_classifier():
    import albert_tf

    return albert_tf.AlbertTextClassifier.from_pretrained(
        str(TINY), num_labels=2, sequence_length=16
    )


def test_string_labels_train_and_predict_by_name(text_classifier, tmp_path):
    import albert_tf

    model = text_classifier
    model.fit(
        ["good film", "bad film", "great", "awful"],
        ["pos", "neg", "pos", "neg"],
        batch_size=2,
        epochs=1,
        verbose=0,
    )
    assert model.label_names == ["neg", "pos"]
    out = model.predict(["fine film"], verbose=0)
    assert out["labels"][0] in ("neg", "pos")
    path = str(tmp_path / "m.keras")
    model.save(path)
    assert albert_tf.load_model(path).label_names == ["neg", "pos"]


@pytest.mark.parametrize(
    "labels, message",
    [
        (["pos", "meh"], "label 'meh' is not one of the model's 2 label_names"),
        ([0, 2], "label 2 is out of range: the model has num_labels=2"),
    ],
)
def test_a_wrong_label_is_one_clear_error(text_classifier, labels, message):
    from albert_tf.core.errors import InputError

    text_classifier.label_names = ["neg", "pos"]
    with pytest.raises(InputError, match=message):
        text_classifier.fit(["a", "b"], labels, epochs=1, verbose=0)


def test_too_many_distinct_names_without_label_names(tmp_path):
    import albert_tf
    from albert_tf.core.errors import InputError

    config = albert_tf.AlbertConfig.from_json_file(TINY / "albert_config.json")
    model = albert_tf.AlbertClassifier(config, num_labels=2, label_names=["x", "y"])
    assert model.get_config()["label_names"] == ["x", "y"]
    text = albert_tf.AlbertTextClassifier(config, num_labels=2)
    with pytest.raises(InputError, match="3 distinct names"):
        text.encode_labels(np.array(["a", "b", "c"]))


def test_a_fine_tuned_head_never_drops_silently(mrpc_run, tmp_path, capsys):
    """keras-hub's preset holds the backbone only: the run folder's classifier head would be
    lost, so the conversion stops with one line; --allow_missing writes it and says what."""
    _, out = mrpc_run
    base = ["--input", out, "--output_format", "keras_hub"]
    r = _convert(capsys, *base, "--output", tmp_path / "kh")
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "output_weights" in r.stderr and "--allow_missing" in r.stderr
    assert not (tmp_path / "kh").exists()
    r = _convert(capsys, *base, "--output", tmp_path / "kh2", "--allow_missing")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "--allow_missing: the keras_hub format has no place" in r.stdout


def test_the_export_holds_every_format_and_the_quantization_report(mrpc_run):
    """--export_format saved_model,litert,onnx --quantize int8: one version folder with each
    file, a README that says how to load each, and the int8 file measured on dev."""
    _, out = mrpc_run
    (version,) = glob.glob(str(out / "export" / "*"))
    names = set(os.listdir(version))
    assert {"saved_model.pb", "model.tflite", "model.onnx", "README.md"} <= names
    readme = pathlib.Path(version, "README.md").read_text()
    assert "model.tflite" in readme and "model.onnx" in readme
    assert "BertNLClassifier" not in readme  # MRPC is a pair task: that client feeds one text
    report = json.loads(pathlib.Path(version, "quantization_report.json").read_text())
    assert report["quantize"] == "int8" and report["split"] == "dev"
    assert report["size_bytes"] == os.path.getsize(os.path.join(version, "model.tflite"))
    assert 0 <= report["max_probability_change"] < 0.05 and report["agreement"] >= 0.9
    assert set(report["metrics"]) == {"keras_float32", "litert_int8"}
