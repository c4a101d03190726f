"""Your own data (--task_name=custom): CSV, JSONL and TSV files with named columns through
run_classifier.py end to end, the label file of a run, the reader and its errors."""

import csv
import json
import pathlib
import sys

import numpy as np
import pytest
import python_processes

from albert_tf.core.errors import InputError
from albert_tf.tasks.classification import custom
from albert_tf.tasks.classification.metrics import custom_metrics

ROOT = pathlib.Path(__file__).resolve().parents[3]
RUNNER = ROOT / "tests" / "scripts" / "bad_input_runner.py"


def _glue_rows(data_dir, task, split):
    lines = (data_dir / task / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines[1:]]


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header] + rows)


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def own_data(tmp_path_factory, data_dir):
    """Three users' folders made from the GLUE samples: SST-2 as CSV (single text, labels
    neg/pos, an extra column), MRPC as JSONL (pairs, integer labels 1/2/10), STS-B as TSV files
    with their own names (regression)."""
    d = tmp_path_factory.mktemp("own")
    csv_dir, jsonl_dir, tsv_dir = d / "csv", d / "jsonl", d / "tsv"
    for folder in (csv_dir, jsonl_dir, tsv_dir):
        folder.mkdir()
    names = {"0": "neg", "1": "pos"}
    for split in ("train", "dev"):
        rows = [
            [i, text, names[label]]
            for i, (text, label) in enumerate(_glue_rows(data_dir, "SST-2", split))
        ]
        _write_csv(csv_dir / f"{split}.csv", ["id", "review", "sentiment"], rows)
    test = [[i, text] for i, (_, text) in enumerate(_glue_rows(data_dir, "SST-2", "test"))][:20]
    _write_csv(csv_dir / "test.csv", ["id", "review"], test)
    for split in ("train", "dev"):
        rows = [
            {
                "premise": r[3],
                "hypothesis": r[4],
                "label": 1 if i % 5 == 0 else (10 if r[0] == "1" else 2),
            }
            for i, r in enumerate(_glue_rows(data_dir, "MRPC", split))
        ]
        _write_jsonl(jsonl_dir / f"{split}.jsonl", rows)
    _write_jsonl(
        jsonl_dir / "test.jsonl",
        [{"premise": r[3], "hypothesis": r[4]} for r in _glue_rows(data_dir, "MRPC", "test")[:10]],
    )
    for split in ("train", "dev"):
        rows = ["s1\ts2\tscore"] + [
            "\t".join([r[7], r[8], r[-1]]) for r in _glue_rows(data_dir, "STS-B", split)
        ]
        (tsv_dir / f"my_{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (d / "dev_only").mkdir()
    (d / "dev_only" / "dev.csv").write_bytes((csv_dir / "dev.csv").read_bytes())
    (d / "dev_only" / "test.csv").write_bytes((csv_dir / "test.csv").read_bytes())
    return d


def test_reader_columns_labels_and_api(own_data):
    examples = custom.load_text_classification_data(
        own_data / "csv" / "train.csv", text_a_column="review", label_column="sentiment"
    )
    assert len(examples) == 50 and {e.label for e in examples} == {"neg", "pos"}
    assert examples[0].text_b is None and examples[0].guid == "train-0"
    p = custom.CustomProcessor(
        data_dir=own_data / "jsonl", text_a_column="premise", text_b_column="hypothesis"
    )
    assert p.get_labels() == ["1", "2", "10"]  # numeric order, not string order
    assert p.num_labels == 3 and p.has_text_b()
    test = p.get_test_examples(None)
    assert len(test) == 10 and test[0].label is None and test[0].guid == "0"
    reg = custom.CustomProcessor(
        {"train": own_data / "tsv" / "my_train.tsv"},
        text_a_column="s1",
        text_b_column="s2",
        label_column="score",
        is_regression=True,
    )
    assert reg.num_labels == 1 and isinstance(reg.get_train_examples(None)[0].label, float)


@pytest.mark.parametrize(
    "content, error",
    [
        ("text,label\n", "has no examples"),
        ("", "is empty"),
        (
            "sentence,label\nhi,1\n",
            "no column 'text' (text_a_column); its columns are: sentence, label",
        ),
        ("text,label\nhi,1\nthere\n", "line 3: 1 fields, but the header has 2"),
    ],
)
def test_reader_errors_name_the_file(tmp_path, content, error):
    path = tmp_path / "train.csv"
    path.write_text(content)
    with pytest.raises(InputError, match="train.csv") as info:
        custom.load_text_classification_data(path)
    assert error in str(info.value)


def test_jsonl_and_extension_errors(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "a", "label": 1}\n{"txt": "b", "label": 0}\n')
    with pytest.raises(
        InputError, match=r"line 2: no 'text' \(text_a_column\); the row has: txt, label"
    ):
        custom.load_text_classification_data(path)
    with pytest.raises(InputError, match="unknown extension '.txt'"):
        custom.load_text_classification_data(tmp_path / "train.txt")


def test_custom_metrics():
    two = custom_metrics([0, 1, 1, 0], [0, 1, 0, 0], 2, False)
    assert (
        two["accuracy"] == 0.75 and two["f1"] == pytest.approx(2 / 3) and "matthews_corrcoef" in two
    )
    three = custom_metrics([0, 1, 2, 2], [0, 1, 2, 1], 3, False)
    assert three["macro_f1"] == pytest.approx((1 + 2 / 3 + 2 / 3) / 3) and "f1" not in three
    reg = custom_metrics([0.0, 1.0, 2.0], [0.0, 1.0, 2.5], 1, True)
    assert set(reg) == {"pearson", "spearman", "mse"} and reg["spearman"] == pytest.approx(1.0)


def test_label_file_must_agree_with_train(own_data, tmp_path):
    p = custom.CustomProcessor(
        data_dir=own_data / "csv", text_a_column="review", label_column="sentiment"
    )
    (tmp_path / "labels.json").write_text(
        json.dumps({"labels": ["pos", "neg"], "is_regression": False})
    )
    # without training, the stored label ids win (their order too)
    assert custom.settle_labels(p, tmp_path, do_train=False) == str(tmp_path / "labels.json")
    assert p.get_labels() == ["pos", "neg"]
    with pytest.raises(
        InputError, match=r"lists the labels \['pos', 'neg'\] but the train file has"
    ):
        custom.settle_labels(p, tmp_path, do_train=True)


def _flags(fixtures_dir, **flags):
    tiny = fixtures_dir / "albert_tiny"
    base = {
        "task_name": "custom",
        "albert_config_file": tiny / "albert_config.json",
        "init_checkpoint": tiny / "model.ckpt-best",
        "spm_model_file": tiny / "30k-clean.model",
        "max_seq_length": 32,
        "train_batch_size": 8,
        "eval_batch_size": 8,
        "predict_batch_size": 8,
        "train_step": 3,
        "save_checkpoints_steps": 3,
        "warmup_step": 0,
        "learning_rate": 1e-4,
    }
    return [f"--{k}" if v is True else f"--{k}={v}" for k, v in {**base, **flags}.items()]


def test_run_classifier_on_own_files(own_data, fixtures_dir, tmp_path):
    """Four runs in one process: CSV single text (+ raw-text export) and JSONL pairs trained,
    evaluated and predicted; TSV regression with explicit files evaluated from the pretrained
    checkpoint; then eval/predict elsewhere with the first run's labels.json."""
    out = {name: tmp_path / name for name in ("csv", "jsonl", "tsv", "reuse")}
    all_steps = {"do_train": True, "do_eval": True, "do_predict": True}
    runs = [
        _flags(
            fixtures_dir,
            data_dir=own_data / "csv",
            text_a_column="review",
            label_column="sentiment",
            output_dir=out["csv"],
            export_dir=tmp_path / "export",
            **all_steps,
        ),
        _flags(
            fixtures_dir,
            data_dir=own_data / "jsonl",
            text_a_column="premise",
            text_b_column="hypothesis",
            output_dir=out["jsonl"],
            **all_steps,
        ),
        _flags(
            fixtures_dir,
            train_file=own_data / "tsv" / "my_train.tsv",
            dev_file=own_data / "tsv" / "my_dev.tsv",
            text_a_column="s1",
            text_b_column="s2",
            label_column="score",
            is_regression=True,
            output_dir=out["tsv"],
            do_eval=True,
        ),
        _flags(
            fixtures_dir,
            data_dir=own_data / "dev_only",
            text_a_column="review",
            label_column="sentiment",
            output_dir=out["reuse"],
            init_checkpoint=out["csv"] / "model.ckpt-best",
            do_eval=True,
            do_predict=True,
        ),
    ]
    (tmp_path / "cases.json").write_text(json.dumps([[str(a) for a in r] for r in runs]))
    r = python_processes.run(
        [
            sys.executable,
            str(RUNNER),
            str(ROOT / "run_classifier.py"),
            str(tmp_path / "cases.json"),
            str(tmp_path / "results.json"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    for result in json.loads((tmp_path / "results.json").read_text()):
        assert result["code"] == 0, result["stderr"][-3000:]

    labels = json.loads((out["csv"] / "labels.json").read_text())
    assert labels["labels"] == ["neg", "pos"] and labels["is_regression"] is False
    results = (out["csv"] / "eval_results.txt").read_text()
    assert "accuracy = " in results and "f1 = " in results
    rows = (out["csv"] / "test_predictions.tsv").read_text().splitlines()
    assert rows[0] == "index\tprediction" and len(rows) == 21
    assert {row.split("\t")[1] for row in rows[1:]} <= {"neg", "pos"}
    probs = np.loadtxt(out["csv"] / "test_results.tsv")
    assert probs.shape == (20, 2)

    assert json.loads((out["jsonl"] / "labels.json").read_text())["labels"] == ["1", "2", "10"]
    assert "macro_f1 = " in (out["jsonl"] / "eval_results.txt").read_text()
    assert np.loadtxt(out["jsonl"] / "test_results.tsv").shape == (10, 3)

    assert "pearson = " in (out["tsv"] / "eval_results.txt").read_text()
    assert json.loads((out["tsv"] / "labels.json").read_text())["is_regression"] is True

    # the reuse run found labels.json beside --init_checkpoint: the same ids, the same predictions
    assert json.loads((out["reuse"] / "labels.json").read_text())["labels"] == ["neg", "pos"]
    np.testing.assert_allclose(np.loadtxt(out["reuse"] / "test_results.tsv"), probs, atol=1e-6)
    assert (out["reuse"] / "test_predictions.tsv").read_text().splitlines() == rows

    # the raw-text export takes one string per example and names the labels
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tf-text ops the signature uses

    from albert_tf.tasks.serving import latest_export

    serve = tf.saved_model.load(latest_export(tmp_path / "export")).signatures["serving_default"]
    texts = [row[1] for row in csv.reader(open(own_data / "csv" / "test.csv", encoding="utf-8"))][
        1:
    ]
    got = serve(text_a=tf.constant(texts))
    np.testing.assert_allclose(got["probabilities"].numpy(), probs, atol=1e-5)
    assert [s.decode() for s in got["labels"].numpy()] == [row.split("\t")[1] for row in rows[1:]]
