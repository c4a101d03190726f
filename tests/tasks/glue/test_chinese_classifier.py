"""run_classifier.py on Chinese text from a brightmart/albert_zh checkpoint with its WordPiece
vocabulary: trains, evaluates, predicts, and its raw-text SavedModel (WordPiece in the graph)
gives the Python path's probabilities."""

import csv

from custom_runs import custom_runs
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, load_original_checkpoint, load_saved_model


@pytest.fixture(scope="module")
def runs(tmp_path_factory, fixtures_dir, data_dir):
    return custom_runs(tmp_path_factory, fixtures_dir, data_dir)


def test_run_classifier_chinese_from_a_brightmart_checkpoint(fixtures_dir, runs):
    """Two steps from the albert_zh tiny release (tests/custom_runs.py's shared process)."""
    results, folder = runs
    r = results["chinese"]
    assert r["code"] == 0, r["stderr"][-3000:]
    release = fixtures_dir / "albert_zh" / "albert_zh_tiny"
    data, out, export = (folder / "zh" / name for name in ("data", "out", "export"))
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
