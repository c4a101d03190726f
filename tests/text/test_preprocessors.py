"""The preprocessor layers give, in-graph, the features the Python data paths build: GLUE packing,
Google's RACE layout, the first SQuAD window; and they run inside tf.data."""

import numpy as np
import pytest
from repo_paths import DATA, FIXTURES
import tensorflow as tf

from albert_tf.tasks.glue.processors import get_processor
from albert_tf.tasks.race.data import encode_race_example, race_choice_text, read_race_examples
from albert_tf.tasks.squad.examples import read_squad_examples
from albert_tf.tasks.squad.features import convert_examples_to_features
from albert_tf.text.encoding import TextEncoder
from albert_tf.text.keras_preprocessors import (
    AlbertMultipleChoicePreprocessor,
    AlbertSpanPreprocessor,
    AlbertTextPreprocessor,
    choice_texts_graph,
)
from albert_tf.text.packing import pack_ids

SPM = str(FIXTURES / "albert_tiny" / "30k-clean.model")
KEYS = ("input_ids", "input_mask", "segment_ids")


@pytest.fixture(scope="module")
def encoder():
    return TextEncoder.from_files(spm_model_file=SPM)


def _as_lists(features):
    return {k: np.asarray(features[k]).tolist() for k in KEYS}


@pytest.mark.parametrize("task,length", [("sst-2", 12), ("mrpc", 24), ("mrpc", 128)])
def test_classification_equals_the_glue_records(encoder, task, length):
    examples = get_processor(task).get_dev_examples(str(DATA / task.upper()))[:8]
    pair = examples[0].text_b is not None
    a = [e.text_a for e in examples]
    x = (a, [e.text_b for e in examples]) if pair else a
    got = _as_lists(AlbertTextPreprocessor(SPM, sequence_length=length)(tuple(x) if pair else x))
    for i, e in enumerate(examples):
        ids_b = encoder.ids(e.text_b) if pair else None
        want = pack_ids(
            encoder.ids(e.text_a), ids_b, length, encoder.cls_id, encoder.sep_id, encoder.pad_id
        )
        assert {k: got[k][i] for k in KEYS} == {k: want[k] for k in KEYS}


@pytest.mark.parametrize("length,max_qa", [(48, 16), (64, 128), (20, 30)])
def test_multiple_choice_equals_googles_race_layout(encoder, length, max_qa):
    examples = read_race_examples(str(DATA), "train") + read_race_examples(str(DATA), "test")
    layer = AlbertMultipleChoicePreprocessor(SPM, sequence_length=length, max_qa_length=max_qa)
    got = layer(
        {
            "article": [e.article for e in examples],
            "question": [e.question for e in examples],
            "options": [list(e.options) for e in examples],
        }
    )
    assert got["input_ids"].shape == (len(examples), 4, length)
    for i, e in enumerate(examples):
        want = encode_race_example(e, encoder, length, max_qa)
        for k in KEYS:
            assert got[k][i].numpy().reshape(-1).tolist() == want[k], (i, k)


def test_choice_texts_fill_every_blank_as_google():
    questions = ["My _ is _.", "_", "no blank here", "", "__x", "end _"]
    options = ["cat", "a_b", "yes", "opt", "y", ""]
    got = choice_texts_graph(tf.constant(questions), tf.constant(options)).numpy()
    assert [g.decode() for g in got] == [race_choice_text(q, o) for q, o in zip(questions, options)]


def test_span_equals_the_first_squad_window(encoder):
    examples = read_squad_examples(
        DATA / "squad" / "v1.1" / "squad.json", is_training=False, version_2_with_negative=False
    )[:12]
    length, max_query = 48, 8
    features = convert_examples_to_features(
        examples, encoder.tokenizer, length, 16, max_query, is_training=False
    )
    first = {f.example_index: f for f in reversed(features)}  # doc_span_index 0 of each
    layer = AlbertSpanPreprocessor(SPM, sequence_length=length, max_query_length=max_query)
    got = layer(
        {
            "question": [e.question_text for e in examples],
            "context": [e.paragraph_text for e in examples],
        }
    )
    for i in range(len(examples)):
        f = first[i]
        assert {k: got[k][i].numpy().tolist() for k in KEYS} == {
            "input_ids": f.input_ids,
            "input_mask": f.input_mask,
            "segment_ids": f.segment_ids,
        }
        offset = int(got["context_offset"][i])
        assert offset == min(f.token_to_orig_map)
        assert int(got["context_length"][i]) == f.paragraph_len


def test_maps_over_tf_data_with_labels_and_one_example_at_a_time():
    layer = AlbertTextPreprocessor(SPM, sequence_length=16)
    texts = ["a first text", "and a second one, longer"]
    ds = tf.data.Dataset.from_tensor_slices((texts, [0, 1])).batch(2).map(layer)
    features, labels = next(iter(ds))
    assert features["input_ids"].shape == (2, 16) and labels.numpy().tolist() == [0, 1]
    single = layer(tf.constant(texts[1]))
    assert single["input_ids"].numpy().tolist() == features["input_ids"][1].numpy().tolist()


def test_bad_inputs_fail_with_one_clear_error():
    layer = AlbertTextPreprocessor(SPM, sequence_length=16)
    with pytest.raises(ValueError, match="text: expected strings"):
        layer(np.array([1, 2]))
    with pytest.raises(ValueError, match="pair"):
        layer((["a"], ["b"], ["c"]))
    with pytest.raises(ValueError, match="sequence_length must be at least 4"):
        AlbertTextPreprocessor(SPM, sequence_length=2)
    with pytest.raises(ValueError, match="has no tokenizer"):
        AlbertTextPreprocessor(None)(["text"])
