"""Keras preprocessor layers: raw strings → the feature dicts the task models take, in the graph.

One layer per task, each on the in-graph tokenizer (GraphTokenizerLayer, whose SentencePiece bytes
travel inside `.keras` files): classification (one text or a pair), multiple choice (Google's
RACE layout) and span extraction (the first window of question + context). Each is called as
keras-hub's preprocessors are, `layer(x, y=None, sample_weight=None)`, so `ds.map(layer)` works
on a tf.data of strings or of (strings, labels); given only x it returns the features.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from albert_tf.text.graph_tokenizer import GraphTokenizerLayer

__all__ = [
    "AlbertTextPreprocessor",
    "AlbertMultipleChoicePreprocessor",
    "AlbertSpanPreprocessor",
    "choice_texts_graph",
    "keep_first",
    "keep_last",
]


def _strings(x, what):
    """A string tensor, or a ValueError naming the input that is not text."""
    x = tf.convert_to_tensor(x)
    if x.dtype != tf.string:
        raise ValueError(f"{what}: expected strings, got a {x.dtype.name} tensor")
    return x


def as_tensors(x):
    """Nested Python / NumPy / pandas inputs as tensors: dict and tuple structure is kept (a
    tuple is a text pair), anything else becomes one tensor."""
    if isinstance(x, dict):
        return {k: as_tensors(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(as_tensors(v) for v in x)
    if x is None or tf.is_tensor(x):
        return x
    return tf.convert_to_tensor(np.asarray(getattr(x, "values", x)))  # .values: a pandas column


def _lengths(ids):
    """int32 row lengths of a ragged [batch, (len)] tensor."""
    return tf.cast(ids.row_lengths(), tf.int32)


def keep_first(ids, lengths):
    """The first lengths[i] ids of each row of a ragged [batch, (len)] tensor."""
    pos = tf.ragged.range(_lengths(ids))
    return tf.ragged.boolean_mask(ids, pos < tf.expand_dims(lengths, 1))


def keep_last(ids, lengths):
    """The last lengths[i] ids of each row of a ragged [batch, (len)] tensor."""
    n = _lengths(ids)
    return tf.ragged.boolean_mask(ids, tf.ragged.range(n) >= tf.expand_dims(n - lengths, 1))


def choice_texts_graph(questions, options):
    """Google's RACE qa text per option, in-graph: every "_" of the question replaced by the
    option, else question + " " + option. questions [N], options [N] → [N]."""
    parts = tf.strings.split(questions, "_")
    n = parts.row_lengths()
    is_last = tf.ragged.range(n) == tf.expand_dims(n - 1, 1)
    fill = tf.gather(options, parts.value_rowids())
    suffix = tf.where(is_last.flat_values, tf.constant(""), fill)
    joined = tf.strings.reduce_join(
        parts.with_flat_values(tf.strings.join([parts.flat_values, suffix])), axis=-1
    )
    blank = tf.strings.regex_full_match(questions, "(?s).*_.*")
    return tf.where(blank, joined, tf.strings.join([questions, options], separator=" "))


class _Preprocessor(keras.layers.Layer):
    """Shared pieces: the tokenizer sublayer, the (x, y, sample_weight) calling convention and
    the config (the SentencePiece model or WordPiece vocabulary is the tokenizer's asset)."""

    def __init__(
        self,
        spm_model_file=None,
        sequence_length=128,
        do_lower_case=True,
        tokenizer=None,
        vocab_file=None,
        **kwargs,
    ):
        # no autocast: float labels (multi-label y) pass through a string layer unchanged
        kwargs.update(trainable=False, dtype="string", autocast=False)
        super().__init__(**kwargs)
        if sequence_length < 4:
            raise ValueError(f"sequence_length must be at least 4, got {sequence_length}")
        self.sequence_length = int(sequence_length)
        self.do_lower_case = bool(do_lower_case)
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        self.tokenizer = tokenizer or GraphTokenizerLayer(
            spm_model_file, do_lower_case=do_lower_case, vocab_file=vocab_file, name="tokenizer"
        )
        self.built = True

    @property
    def graph_tokenizer(self):
        """The in-graph tokenizer (ids, special ids; SentencePiece or WordPiece)."""
        if self.tokenizer.tokenizer is None:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} has no tokenizer: pass "
                "spm_model_file or vocab_file, or load it from a .keras file"
            )
        return self.tokenizer.tokenizer

    def _ids(self, strings):
        return self.graph_tokenizer.tokenize(strings)

    def features(self, x):
        """Raw inputs → feature dict; defined per task."""
        raise NotImplementedError

    def __call__(self, x, y=None, sample_weight=None, **kwargs):
        """Layer call after turning Python lists, NumPy arrays and pandas columns into tensors."""
        return super().__call__(as_tensors(x), as_tensors(y), as_tensors(sample_weight), **kwargs)

    def call(self, x, y=None, sample_weight=None):
        """Features of x; with y (and sample_weight) the tuple Keras' fit takes."""
        features = self.features(x)
        if y is None and sample_weight is None:
            return features
        return keras.utils.pack_x_y_sample_weight(features, y, sample_weight)

    def get_config(self):
        """Constructor arguments, for Keras serialisation."""
        config = super().get_config()
        config.update(
            sequence_length=self.sequence_length,
            do_lower_case=self.do_lower_case,
            tokenizer=keras.saving.serialize_keras_object(self.tokenizer),
        )
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTextPreprocessor(_Preprocessor):
    """One text or a pair → [CLS] A [SEP] (B [SEP]) `input_ids`, `input_mask`, `segment_ids`
    [batch, sequence_length], as the GLUE records (Google's truncation: pop from the longer).

    x: strings [batch]; a pair is a tuple (text_a, text_b) or a dict with `text_a`/`text_b`.
    """

    def features(self, x):
        if isinstance(x, dict):
            x = (x["text_a"], x["text_b"]) if "text_b" in x else x["text_a"]
        if isinstance(x, (tuple, list)):
            if len(x) != 2:
                raise ValueError(f"a text pair is (text_a, text_b); got {len(x)} inputs")
            a, b = _strings(x[0], "text_a"), _strings(x[1], "text_b")
        else:
            a, b = _strings(x, "text"), None
        scalar = a.shape.rank == 0
        if scalar:
            a, b = tf.reshape(a, [1]), None if b is None else tf.reshape(b, [1])
        tok = self.graph_tokenizer
        out = tok.encode(a, b, self.sequence_length)
        return {k: v[0] for k, v in out.items()} if scalar else out


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoicePreprocessor(_Preprocessor):
    """article [batch], question [batch], options [batch, num_choices] → features
    [batch, num_choices, sequence_length] in Google's RACE layout: per option
    [CLS] article [SEP] qa [SEP], qa the question with the option (see `choice_texts_graph`)
    cut to its last `max_qa_length` ids, the article cut to fit.

    x: a dict with `article`, `question`, `options`, or a tuple (article, question, options).
    """

    def __init__(
        self,
        spm_model_file=None,
        sequence_length=512,
        do_lower_case=True,
        max_qa_length=128,
        num_choices=4,
        **kwargs,
    ):
        super().__init__(spm_model_file, sequence_length, do_lower_case, **kwargs)
        self.max_qa_length = int(max_qa_length)
        self.num_choices = int(num_choices)

    def features(self, x):
        if isinstance(x, dict):
            x = (x["article"], x["question"], x["options"])
        if not isinstance(x, (tuple, list)) or len(x) != 3:
            raise ValueError(
                "multiple-choice input is (article, question, options) or a dict with those keys"
            )
        article = _strings(x[0], "article")
        question = _strings(x[1], "question")
        options = _strings(x[2], "options")
        scalar = article.shape.rank == 0
        if scalar:
            article, question = tf.reshape(article, [1]), tf.reshape(question, [1])
            options = tf.reshape(options, [1, -1])
        c = self.num_choices
        options = tf.ensure_shape(options, [None, c])
        flat_q = tf.reshape(tf.repeat(tf.expand_dims(question, 1), c, axis=1), [-1])
        qa_ids = self._ids(choice_texts_graph(flat_q, tf.reshape(options, [-1])))
        article_ids = self._ids(article)
        batch = tf.shape(article)[0]
        article_ids = tf.gather(article_ids, tf.repeat(tf.range(batch), c))
        budget = self.sequence_length - 3
        qa_len = tf.minimum(_lengths(qa_ids), min(max(self.max_qa_length, 0), budget))
        qa_ids = keep_last(qa_ids, qa_len)
        article_ids = keep_first(article_ids, tf.minimum(_lengths(article_ids), budget - qa_len))
        packed = self.graph_tokenizer.pack(article_ids, qa_ids, self.sequence_length)
        shape = [-1, c, self.sequence_length]
        out = {k: tf.reshape(v, shape) for k, v in packed.items()}
        return {k: v[0] for k, v in out.items()} if scalar else out

    def get_config(self):
        config = super().get_config()
        config.update(max_qa_length=self.max_qa_length, num_choices=self.num_choices)
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSpanPreprocessor(_Preprocessor):
    """question + context → [CLS] question [SEP] context [SEP] features [batch, sequence_length]
    of the FIRST window only, as Google's SQuAD features: the question cut to its first
    `max_query_length` ids, the context to what then fits. Context past the window is not seen
    (the limit of this single-window preprocessor). Also returns `context_length`, the number of
    context ids in the window, and `context_offset`, where they start.

    x: a dict with `question`, `context`, or a tuple (question, context).
    """

    def __init__(
        self,
        spm_model_file=None,
        sequence_length=384,
        do_lower_case=True,
        max_query_length=64,
        **kwargs,
    ):
        super().__init__(spm_model_file, sequence_length, do_lower_case, **kwargs)
        if sequence_length < max_query_length + 4:
            raise ValueError(
                f"sequence_length {sequence_length} leaves no room for the context "
                f"after a {max_query_length}-token question and 3 special tokens"
            )
        self.max_query_length = int(max_query_length)

    def features(self, x):
        if isinstance(x, dict):
            x = (x["question"], x["context"])
        if not isinstance(x, (tuple, list)) or len(x) != 2:
            raise ValueError("span input is (question, context) or a dict with those keys")
        question, context = _strings(x[0], "question"), _strings(x[1], "context")
        scalar = question.shape.rank == 0
        if scalar:
            question, context = tf.reshape(question, [1]), tf.reshape(context, [1])
        q_ids, c_ids = self._ids(question), self._ids(context)
        q_ids = keep_first(q_ids, tf.minimum(_lengths(q_ids), self.max_query_length))
        q_len = _lengths(q_ids)
        c_len = tf.minimum(_lengths(c_ids), self.sequence_length - 3 - q_len)
        c_ids = keep_first(c_ids, c_len)
        out = dict(self.graph_tokenizer.pack(q_ids, c_ids, self.sequence_length))
        out["context_offset"], out["context_length"] = q_len + 2, c_len
        return {k: v[0] for k, v in out.items()} if scalar else out

    def get_config(self):
        config = super().get_config()
        config.update(max_query_length=self.max_query_length)
        return config
