"""run_classifier.py on Chinese text from a brightmart/albert_zh checkpoint with its WordPiece
vocabulary: trains, evaluates, predicts, and its raw-text SavedModel (WordPiece in the graph)
gives the Python path's probabilities."""

import csv
import pathlib
import random
import sys

import numpy as np
import python_processes
import tensorflow as tf

from albert_tf import AlbertConfig, load_original_checkpoint, load_saved_model

ROOT = pathlib.Path(__file__).resolve().parents[3]
WORDS = "我 们 的 中 文 很 好 北 京 是 国 首 都 大 学 人 有 一 个 天 气 不 错 ， 。 ！".split()
WORDS += ["ALBERT", "2019"]


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["text", "label"]] + rows)


def test_run_classifier_chinese_from_a_brightmart_checkpoint(fixtures_dir, tmp_path):
    rng = random.Random(0)
    rows = lambda n: [
        [
            "".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))),
            rng.choice(["正面", "负面"]),
        ]
        for _ in range(n)
    ]
    data = tmp_path / "data"
    data.mkdir()
    _write(data / "train.csv", rows(24))
    _write(data / "dev.csv", rows(8))
    _write(data / "test.csv", rows(8))
    release = fixtures_dir / "albert_zh" / "albert_zh_tiny"
    out, export = tmp_path / "out", tmp_path / "export"
    cmd = [
        sys.executable,
        str(ROOT / "run_classifier.py"),
        "--task_name=custom",
        f"--data_dir={data}",
        "--text_a_column=text",
        "--label_column=label",
        f"--albert_config_file={release / 'albert_config.json'}",
        f"--init_checkpoint={release}",
        f"--vocab_file={release / 'vocab.txt'}",
        f"--output_dir={out}",
        f"--export_dir={export}",
        "--max_seq_length=16",
        "--train_batch_size=8",
        "--eval_batch_size=8",
        "--predict_batch_size=8",
        "--train_step=2",
        "--warmup_step=1",
        "--save_checkpoints_steps=2",
        "--do_train",
        "--do_eval",
        "--do_predict",
    ]
    r = python_processes.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "accuracy = " in (out / "eval_results.txt").read_text()
    from albert_tf.text.encoding import TextEncoder

    encoder = TextEncoder.from_files(vocab_file=release / "vocab.txt")
    texts = [row[0] for row in csv.reader(open(data / "test.csv", encoding="utf-8"))][1:]
    serve = load_saved_model(export).signatures["serving_default"]
    got = serve(text_a=tf.constant(texts))["probabilities"].numpy()
    config = AlbertConfig.from_json_file(release / "albert_config.json")
    ids = [[encoder.cls_id] + encoder.ids(t)[:14] + [encoder.sep_id] for t in texts]
    feats = {
        "input_ids": np.array([i + [0] * (16 - len(i)) for i in ids], np.int32),
        "input_mask": np.array([[1] * len(i) + [0] * (16 - len(i)) for i in ids], np.int32),
        "segment_ids": np.zeros((len(ids), 16), np.int32),
    }
    import keras

    from albert_tf.modeling.finetuning_models import AlbertClassifier

    model = AlbertClassifier(config, num_labels=2)
    model(feats)
    load_original_checkpoint(model, out / "model.ckpt-best")
    want = keras.ops.softmax(model(feats, training=False)["logits"], -1).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(np.loadtxt(out / "test_results.tsv"), want, atol=1e-5)
