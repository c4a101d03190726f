"""tf-text's `FastSentencepieceTokenizer` on any batch, on every supported tensorflow-text.

Before tensorflow-text 2.20, one `FastSentencepieceTokenize` call that yields more than 32,767
pieces aborts the whole process (`F tensor_shape.cc ... InitDims`; measured on 2.18.1 and
2.19.0: 32,767 one-piece texts pass, 32,768 abort). There, `fast_tokenize` cuts the batch into
chunks of rows whose UTF-8 bytes (an upper bound of their pieces, plus one for SentencePiece's
"▁" prefix) fit half of that (the other half for the normalizer's expansions, such as NFKC's
ligatures), tokenizes each and joins the rows back; a single text too long for one call is an
error naming the version. From 2.20 on it is one call, as tf-text's own.
"""

from __future__ import annotations

from packaging.version import Version
import tensorflow as tf
import tensorflow_text as tf_text

# the most pieces one call may yield, or None where tf-text has no limit (2.20 and later)
PIECE_LIMIT = 32767 if Version(tf_text.__version__) < Version("2.20") else None


def fast_tokenize(sp, strings, piece_limit=PIECE_LIMIT):
    """`sp.tokenize(strings)` for a batch of any size.

    Args:
        sp: A `tf_text.FastSentencepieceTokenizer`.
        strings: A string tensor of shape `[batch]`.
        piece_limit: The most pieces one tokenizer call may yield (None: no limit, one call).

    Returns:
        The ids, a `tf.RaggedTensor` `[batch, (pieces)]`, as `sp.tokenize` returns them.

    Raises:
        tf.errors.InvalidArgumentError: A text too long for one call under `piece_limit`.

    Example:

    >>> import tensorflow as tf
    >>> import tensorflow_text as tf_text
    >>> from albert_tf.text.tokenization import FullTokenizer
    >>> py = FullTokenizer(spm_model_file="tests/data/fixtures/spm.model")
    >>> sp = tf_text.FastSentencepieceTokenizer(py.sp_model.serialized_model_proto())
    >>> texts = tf.constant(["a b c", "hello", ""])
    >>> fast_tokenize(sp, texts, piece_limit=16).to_list() == sp.tokenize(texts).to_list()
    True
    """
    if piece_limit is None:
        return sp.tokenize(strings)
    cost = tf.cast(tf.strings.length(strings, unit="BYTE") + 1, tf.int32)
    budget = piece_limit // 2
    widest = tf.reduce_max(tf.concat([cost, [1]], 0))
    check = tf.debugging.assert_less_equal(
        widest,
        budget,
        message=f"tensorflow-text {tf_text.__version__} cannot tokenize a text over "
        f"{budget - 1} bytes (its tokenizer aborts past {piece_limit} pieces); "
        "use tensorflow-text 2.20 or later",
    )
    with tf.control_dependencies([check]):
        rows = tf.maximum(budget // widest, 1)
    count = tf.size(strings)
    chunks = tf.maximum((count + rows - 1) // rows, 1)  # one (empty) chunk for no rows
    spec = dict(size=chunks, infer_shape=False, element_shape=tf.TensorShape([None]))

    def step(i, values, lengths):
        ids = sp.tokenize(strings[i * rows : (i + 1) * rows])
        values = values.write(i, tf.cast(ids.flat_values, tf.int32))
        return i + 1, values, lengths.write(i, tf.cast(ids.row_lengths(), tf.int64))

    start = (tf.constant(0), tf.TensorArray(tf.int32, **spec), tf.TensorArray(tf.int64, **spec))
    _, values, lengths = tf.while_loop(lambda i, *_: i < chunks, step, start)
    return tf.RaggedTensor.from_row_lengths(values.concat(), lengths.concat(), validate=False)
