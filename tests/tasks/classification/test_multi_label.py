"""Multi-label classification: --task_name=custom --multi_label (a sigmoid per label, binary
cross-entropy, a threshold chosen on dev, micro/macro F1 and exact match equal to
scikit-learn's), its export, and AlbertTextClassifier(multi_label=True)."""

import json
import pathlib
import random
import sys

import numpy as np
import pytest
import python_processes

from albert_tf.tasks.metrics import best_threshold, multilabel_scores

ROOT = pathlib.Path(__file__).resolve().parents[3]
# one word per label (words the fixture's SentencePiece model keeps whole), plus filler
CUES = {"sports": "function", "music": "string", "tech": "python"}
FILLER = "line loop name type method return call code set key".split()


def _rows(rng, n):
    rows = []
    for _ in range(n):
        labels = sorted(rng.sample(sorted(CUES), rng.randint(0, 2)))
        words = [CUES[x] for x in labels] + rng.sample(FILLER, 4)
        rng.shuffle(words)
        rows.append({"text": " ".join(words), "tags": labels})
    return rows


def test_multilabel_metrics_equal_sklearn():
    from sklearn.metrics import accuracy_score, f1_score

    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.integers(0, 2, (30, 5))
        p = rng.random((30, 5))
        for t in (0.3, 0.5, 0.7):
            got = multilabel_scores(p, y, t)
            pred = (p >= t).astype(int)
            assert got["micro_f1"] == pytest.approx(
                f1_score(y, pred, average="micro", zero_division=0)
            )
            assert got["macro_f1"] == pytest.approx(
                f1_score(y, pred, average="macro", zero_division=0)
            )
            assert got["exact_match"] == pytest.approx(accuracy_score(y, pred))
    y = np.array([[1, 0], [0, 1], [1, 1]])
    p = np.array([[0.3, 0.1], [0.2, 0.35], [0.32, 0.4]])
    assert best_threshold(p, y) == 0.3  # 0.5 would predict nothing


def test_run_classifier_multi_label(fixtures_dir, tmp_path):
    rng = random.Random(0)
    data = tmp_path / "data"
    data.mkdir()
    for split, n in (("train", 96), ("dev", 24), ("test", 16)):
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(rng, n)))
    tiny, out, export = fixtures_dir / "albert_tiny", tmp_path / "out", tmp_path / "export"
    cmd = [
        sys.executable,
        str(ROOT / "run_classifier.py"),
        "--task_name=custom",
        "--multi_label",
        f"--data_dir={data}",
        "--label_column=tags",
        f"--albert_config_file={tiny / 'albert_config.json'}",
        f"--init_checkpoint={tiny / 'model.ckpt-best'}",
        f"--spm_model_file={tiny / '30k-clean.model'}",
        f"--output_dir={out}",
        f"--export_dir={export}",
        "--max_seq_length=16",
        "--train_batch_size=16",
        "--eval_batch_size=8",
        "--predict_batch_size=8",
        "--train_step=60",
        "--warmup_step=6",
        "--save_checkpoints_steps=60",
        "--learning_rate=2e-3",
        "--do_train",
        "--do_eval",
        "--do_predict",
    ]
    r = python_processes.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((out / "labels.json").read_text())["labels"] == ["music", "sports", "tech"]
    results = dict(
        line.split(" = ")
        for line in (out / "eval_results.txt").read_text().splitlines()
        if " = " in line
    )
    assert {"micro_f1", "macro_f1", "exact_match", "threshold", "micro_f1_at_0.5"} <= set(results)
    # learning (slowly: the fixture's [CLS] barely depends on the input): below chance, ln 2
    assert float(results["loss"]) < 0.66, results
    probs = np.loadtxt(out / "test_results.tsv")
    assert probs.shape == (16, 3)
    rows = (out / "test_predictions.tsv").read_text().splitlines()
    threshold = float(results["threshold"])
    names = ["music", "sports", "tech"]
    assert rows[1:] == [
        f"{i}\t{','.join(n for n, p in zip(names, row) if p >= threshold)}"
        for i, row in enumerate(probs)
    ]
    import tensorflow as tf

    from albert_tf import load_saved_model

    serve = load_saved_model(export).signatures["serving_default"]
    texts = [json.loads(line)["text"] for line in (data / "test.jsonl").read_text().splitlines()]
    got = serve(text_a=tf.constant(texts))
    np.testing.assert_allclose(got["probabilities"].numpy(), probs, atol=1e-5)
    assert [x.decode() for x in got["labels"].numpy()] == [row.split("\t")[1] for row in rows[1:]]


def test_text_classifier_multi_label(fixtures_dir):
    from albert_tf import AlbertTextClassifier

    rng = random.Random(1)
    rows = _rows(rng, 64)
    names = sorted(CUES)
    x = [r["text"] for r in rows]
    y = np.array([[n in r["tags"] for n in names] for r in rows], np.float32)
    model = AlbertTextClassifier.from_pretrained(
        fixtures_dir / "albert_tiny", num_labels=3, multi_label=True, sequence_length=16
    )
    model.compile(learning_rate=2e-3)
    history = model.fit(x, y, batch_size=16, epochs=4, verbose=0).history
    assert history["loss"][-1] < history["loss"][0] < 0.7  # binary cross-entropy, from ~ln 2
    threshold = model.choose_threshold(x, y)
    out = model.predict(x, verbose=0)
    assert out["label_mask"].shape == (64, 3) and model.threshold == threshold
    np.testing.assert_array_equal(out["label_mask"], out["probabilities"] >= threshold)
    scores = multilabel_scores(out["probabilities"], y, threshold)
    assert scores["micro_f1"] >= multilabel_scores(out["probabilities"], y, 0.5)["micro_f1"]


def test_multi_label_loss_is_binary_cross_entropy():
    import keras

    from albert_tf import AlbertConfig
    from albert_tf.modeling.finetuning_models import AlbertClassifier

    config = AlbertConfig(
        vocab_size=50,
        embedding_size=8,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    model = AlbertClassifier(config, 4, multi_label=True)
    rng = np.random.default_rng(0)
    features = {
        "input_ids": rng.integers(0, 50, (6, 8)).astype("int32"),
        "label_vector": rng.integers(0, 2, (6, 4)).astype("float32"),
    }
    out = model(features)
    want = keras.losses.binary_crossentropy(
        features["label_vector"], out["logits"], from_logits=True
    )
    np.testing.assert_allclose(model.task_loss(features, None, out), np.mean(want), rtol=1e-5)
    np.testing.assert_allclose(
        out["probabilities"], 1 / (1 + np.exp(-np.asarray(out["logits"]))), atol=1e-6
    )
