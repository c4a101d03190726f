"""Your own data (--task_name=custom): CSV, JSONL and TSV files with named columns through
run_classifier.py end to end, the label file of a run, the reader and its errors."""

import csv
import json

from custom_runs import custom_runs, write_own_data
import numpy as np
import pytest

from albert_tf.core.errors import InputError
from albert_tf.tasks.classification import custom
from albert_tf.tasks.classification.metrics import custom_metrics


@pytest.fixture(scope="module")
def own_data(tmp_path_factory, data_dir):
    """Three users' folders made from the GLUE samples (custom_runs.write_own_data)."""
    d = tmp_path_factory.mktemp("own") / "own"
    write_own_data(d, data_dir)
    return d


@pytest.fixture(scope="module")
def runs(tmp_path_factory, fixtures_dir, data_dir):
    return custom_runs(tmp_path_factory, fixtures_dir, data_dir)


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


def test_run_classifier_on_own_files(runs):
    """Four runs in one process (tests/custom_runs.py): CSV single text (+ raw-text export) and
    JSONL pairs trained, evaluated and predicted; TSV regression with explicit files evaluated
    from the pretrained checkpoint; then eval/predict elsewhere with the first run's
    labels.json."""
    results, folder = runs
    for name in ("csv", "jsonl", "tsv", "reuse"):
        assert results[name]["code"] == 0, results[name]["stderr"][-3000:]
    out, own_data = {n: folder / "own-out" / n for n in results}, folder / "own"

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

    serve = tf.saved_model.load(latest_export(folder / "own-export")).signatures["serving_default"]
    texts = [row[1] for row in csv.reader(open(own_data / "csv" / "test.csv", encoding="utf-8"))][
        1:
    ]
    got = serve(text_a=tf.constant(texts))
    np.testing.assert_allclose(got["probabilities"].numpy(), probs, atol=1e-5)
    assert [s.decode() for s in got["labels"].numpy()] == [row.split("\t")[1] for row in rows[1:]]
