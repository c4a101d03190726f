"""sp_batches.fast_tokenize: tf-text's FastSentencepieceTokenizer on any batch. Before
tensorflow-text 2.20 one call past 32,767 pieces aborts the process; the chunked path must give
the very ids of one call, in eager, tf.function and tf.data, and refuse a text too long."""

import pytest
from repo_paths import FIXTURES
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.text import sp_batches
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.text.tokenization import FullTokenizer

LINES = (FIXTURES / "corpus.txt").read_text(encoding="utf-8").split("\n")[:300]


@pytest.fixture(scope="module")
def tokenizers():
    py = FullTokenizer(spm_model_file=str(FIXTURES / "spm.model"))
    return py, tf_text.FastSentencepieceTokenizer(py.sp_model.serialized_model_proto())


@pytest.mark.parametrize("limit", [None, 2000, 4000, 32767])
def test_chunks_give_the_ids_of_one_call(tokenizers, limit):
    py, sp = tokenizers
    want = [py.sp_model.encode(t) for t in LINES]
    texts = tf.constant(LINES)
    assert sp_batches.fast_tokenize(sp, texts, limit).to_list() == want
    assert sp_batches.fast_tokenize(sp, tf.constant([], tf.string), limit).to_list() == []
    in_graph = tf.function(lambda s: sp_batches.fast_tokenize(sp, s, limit))
    assert in_graph(texts).to_list() == want
    assert in_graph(tf.constant([], tf.string)).to_list() == []
    mapped = tf.data.Dataset.from_tensors(texts).map(
        lambda s: sp_batches.fast_tokenize(sp, s, limit)
    )
    assert [r.to_list() for r in mapped] == [want]


def test_a_text_too_long_for_one_call_is_an_error_naming_the_version(tokenizers):
    _, sp = tokenizers
    with pytest.raises(tf.errors.InvalidArgumentError, match="tensorflow-text 2.20 or later"):
        sp_batches.fast_tokenize(sp, tf.constant(["x " * 600]), 1000)


def test_a_batch_of_more_than_32767_pieces_tokenizes_on_this_tf_text(tokenizers):
    """On tensorflow-text 2.18/2.19 this batch aborted the process before sp_batches."""
    py, _ = tokenizers
    graph = GraphTokenizer(str(FIXTURES / "spm.model"), preprocess=False)
    ids = graph(tf.constant([LINES[5]] * 3000))
    assert int(tf.size(ids.flat_values)) > 32767
    assert ids.to_list() == [py.sp_model.encode(LINES[5])] * 3000
