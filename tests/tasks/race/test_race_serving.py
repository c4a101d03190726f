"""The RACE SavedModel on raw strings equals the Python path (encode_race_example + model)."""

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, load_original_checkpoint, load_saved_model
from albert_tf.tasks.race import data as race
from albert_tf.tasks.race.serving import choice_texts_graph, export_race
from albert_tf.tasks.race.task import RaceTask, race_model_fn
from albert_tf.text.encoding import TextEncoder


def test_choice_texts_graph_matches_python():
    questions = ["Where is _ now?", "Why?", "_ and _", "no blank \\1 here", ""]
    options = [["a", "b\\1", "", "ünï"]] * len(questions)
    got = choice_texts_graph(tf.constant(questions), tf.constant(options)).numpy()
    want = [race.race_choice_texts(q, o) for q, o in zip(questions, options)]
    assert [[s.decode() for s in row] for row in got] == want


@pytest.mark.parametrize("tokenizer", ["sentencepiece", "wordpiece"])
def test_race_saved_model_equals_python_path(fixtures_dir, data_dir, tmp_path, tokenizer):
    """Both tokenizers in the graph: the SentencePiece model, or a WordPiece vocabulary (the
    Chinese releases)."""
    max_qa_length = 8  # shorter than most question + option texts: the kept tail matters
    if tokenizer == "sentencepiece":
        encoder = TextEncoder.from_files(str(fixtures_dir / "spm.model"), do_lower_case=True)
    else:
        encoder = TextEncoder.from_files(vocab_file=str(fixtures_dir / "albert_zh" / "vocab.txt"))
    task = RaceTask(str(data_dir), encoder, 64, str(tmp_path / "cache"), max_qa_length)
    tiny = fixtures_dir / "albert_tiny"
    model = race_model_fn(AlbertConfig.from_json_file(tiny / "albert_config.json"))()
    load_original_checkpoint(model, tiny / "model.ckpt-best")
    examples = task.examples("test")[:6]
    recs = [race.encode_race_example(e, encoder, 64, max_qa_length) for e in examples]
    feats = {
        k: np.array([r[k] for r in recs], np.int32)
        for k in ("input_ids", "input_mask", "segment_ids")
    }
    want = model(feats, training=False)["probabilities"].numpy()

    path = export_race(model, task, tmp_path / "export")
    readme = (pathlib.Path(path) / "README.md").read_text()
    assert "import tensorflow_text" in readme and "options=tf.constant([[" in readme
    serve = load_saved_model(path).signatures["serving_default"]
    got = serve(
        article=tf.constant([e.article for e in examples]),
        question=tf.constant([e.question for e in examples]),
        options=tf.constant([list(e.options) for e in examples]),
    )
    np.testing.assert_allclose(got["probabilities"].numpy(), want, atol=1e-5)
    np.testing.assert_array_equal(got["prediction"].numpy(), np.argmax(want, -1))
    assert [s.decode() for s in got["letter"].numpy()] == ["ABCD"[i] for i in np.argmax(want, -1)]
