"""Keras preprocessor layers: raw strings to the feature dicts the task models take, in the graph.

There is one layer per task, each built on the in-graph tokenizer (`GraphTokenizerLayer`, whose
SentencePiece model is saved inside `.keras` files): classification (one text or a pair),
multiple choice (Google's RACE layout) and span extraction (the first window of question +
context). Each is called as keras-hub's preprocessors are, `layer(x, y=None, sample_weight=None)`,
so `ds.map(layer)` works on a tf.data of strings or of (strings, labels); given only x it returns
the features.
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
    """Returns x as a string tensor; raises ValueError naming the input when it is not text."""
    x = tf.convert_to_tensor(x)
    if x.dtype != tf.string:
        raise ValueError(f"{what}: expected strings, got a {x.dtype.name} tensor")
    return x


def as_tensors(x):
    """Converts nested Python / NumPy / pandas inputs to tensors.

    Dict and tuple structure is kept (a tuple is a text pair); anything else becomes one tensor.

    Args:
        x: A list, NumPy array, pandas column, tensor or `None`, or a dict or tuple of them.

    Returns:
        The same structure with tensors in place of the leaves (`None` stays `None`).
    """
    if isinstance(x, dict):
        return {k: as_tensors(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(as_tensors(v) for v in x)
    if x is None or tf.is_tensor(x):
        return x
    return tf.convert_to_tensor(np.asarray(getattr(x, "values", x)))  # .values: a pandas column


def _to_backend(t):
    """An eager TensorFlow tensor as a tensor of Keras's backend (strings: a NumPy array)."""
    if t is None or not tf.is_tensor(t):
        return t
    return t.numpy() if t.dtype == tf.string else keras.ops.convert_to_tensor(t.numpy())


def _lengths(ids):
    """int32 row lengths of a ragged [batch, (len)] tensor."""
    return tf.cast(ids.row_lengths(), tf.int32)


def keep_first(ids, lengths):
    """Keeps the first `lengths[i]` ids of each row of a ragged tensor.

    Args:
        ids: A ragged tensor `[batch, (len)]`.
        lengths: int32 `[batch]`, how many ids to keep per row.

    Returns:
        A ragged tensor `[batch, (lengths)]`.
    """
    pos = tf.ragged.range(_lengths(ids))
    return tf.ragged.boolean_mask(ids, pos < tf.expand_dims(lengths, 1))


def keep_last(ids, lengths):
    """Keeps the last `lengths[i]` ids of each row of a ragged tensor.

    Args:
        ids: A ragged tensor `[batch, (len)]`.
        lengths: int32 `[batch]`, how many ids to keep per row.

    Returns:
        A ragged tensor `[batch, (lengths)]`.
    """
    n = _lengths(ids)
    return tf.ragged.boolean_mask(ids, tf.ragged.range(n) >= tf.expand_dims(n - lengths, 1))


def choice_texts_graph(questions, options):
    """Builds Google's RACE question-option text for each option, in TensorFlow ops.

    Every "_" of the question is replaced by the option; a question without "_" is followed by
    a space and the option.

    Args:
        questions: A string tensor `[N]`.
        options: A string tensor `[N]`, the option paired with each question.

    Returns:
        A string tensor `[N]`.
    """
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
    """Base of the preprocessor layers: the tokenizer sublayer, the (x, y, sample_weight)
    calling convention and the config (the SentencePiece model or WordPiece vocabulary is saved
    as the tokenizer's asset)."""

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
        """The in-graph tokenizer (`GraphTokenizer` or `GraphWordPieceTokenizer`).

        Raises:
            ValueError: when the layer has no tokenizer (built without a model file and not
                loaded from a `.keras` file).
        """
        if self.tokenizer.tokenizer is None:
            raise ValueError(
                f"{type(self).__name__} {self.name!r} has no tokenizer: pass "
                "spm_model_file or vocab_file, or load it from a .keras file"
            )
        return self.tokenizer.tokenizer

    def _ids(self, strings):
        return self.graph_tokenizer.tokenize(strings)

    def features(self, x):
        """Turns the raw inputs into features; defined by each task's subclass.

        Args:
            x: The raw inputs (string tensors, in the task's structure).

        Returns:
            A dict of int32 feature tensors.
        """
        raise NotImplementedError

    def __call__(self, x, y=None, sample_weight=None, **kwargs):
        """Calls the layer, first turning Python lists, NumPy arrays and pandas columns into
        tensors.

        Args:
            x: The raw texts, in the structure the task's layer documents.
            y: Labels, passed through unchanged, or `None`. Defaults to `None`.
            sample_weight: Per-example weights, passed through unchanged, or `None`.
                Defaults to `None`.
            **kwargs: Other `keras.layers.Layer.__call__` arguments.

        Returns:
            The features dict when only x is given, else the tuple `(features, y)` or
            `(features, y, sample_weight)` that Keras' `fit` takes. On a backend other than
            TensorFlow, called eagerly, the leaves are that backend's tensors (strings stay
            NumPy arrays); inside `tf.data`, TensorFlow's.
        """
        args = as_tensors(x), as_tensors(y), as_tensors(sample_weight)
        if keras.backend.backend() == "tensorflow":
            return super().__call__(*args, **kwargs)
        # Tokenizing is TensorFlow's work on any backend (tf-text ops, in tf.data on the host):
        # run it outside Keras's call, which would convert the strings to the backend's arrays.
        out = self.call(*args)
        return tf.nest.map_structure(_to_backend, out) if tf.executing_eagerly() else out

    def call(self, x, y=None, sample_weight=None):
        """Computes the features of x, packed with y and sample_weight when given.

        Args:
            x: The raw texts, as tensors.
            y: Labels or `None`. Defaults to `None`.
            sample_weight: Per-example weights or `None`. Defaults to `None`.

        Returns:
            The features dict, or `(features, y[, sample_weight])`.
        """
        features = self.features(x)
        if y is None and sample_weight is None:
            return features
        return keras.utils.pack_x_y_sample_weight(features, y, sample_weight)

    def get_config(self):
        """Returns the constructor arguments, for Keras serialisation.

        Returns:
            A dict with the Layer config, `sequence_length`, `do_lower_case` and the
            serialised tokenizer layer.
        """
        config = super().get_config()
        config.update(
            sequence_length=self.sequence_length,
            do_lower_case=self.do_lower_case,
            tokenizer=keras.saving.serialize_keras_object(self.tokenizer),
        )
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTextPreprocessor(_Preprocessor):
    """Keras layer that turns raw texts (one or a pair) into classification features.

    Each example becomes `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, as in Google's GLUE
    records, packed to `input_ids`, `input_mask` and `segment_ids` (int32,
    `[batch, sequence_length]`). A pair that is too long is cut as Google cuts it: one piece at
    a time from the end of the longer text. Tokenization runs in the graph, so the layer works
    in `tf.data` pipelines and exported SavedModels, and `.keras` files save the
    SentencePiece model with it. `AlbertTextClassifier` holds one of these.

    The input x is strings `[batch]` (or one string); a pair is a tuple `(text_a, text_b)` or a
    dict with `text_a` and `text_b`. Called with labels, `layer(x, y)` returns
    `(features, y)`, so `dataset.map(layer)` prepares a training set.

    Args:
        spm_model_file: Path of the SentencePiece model (e.g. a release's `30k-clean.model`).
            Defaults to `None` (then give `vocab_file` or `tokenizer`).
        sequence_length: int. Length of the packed features, at least 4. Defaults to `128`.
        do_lower_case: Whether the text is lowercased (Google's English releases: `True`).
            Defaults to `True`.
        tokenizer: A `GraphTokenizerLayer` (or its serialised config) to use instead of
            building one from the files. Defaults to `None`.
        vocab_file: Path of a WordPiece vocabulary (Google's Chinese releases), used when
            `spm_model_file` is not given. Defaults to `None`.
        **kwargs: Other `keras.layers.Layer` arguments, such as `name`.

    Raises:
        ValueError: when `sequence_length` is below 4; when called, when an input is not
            strings or a pair does not have two texts.

    Example:

    >>> import albert_tf
    >>> preprocessor = albert_tf.AlbertTextPreprocessor(
    ...     "tests/data/fixtures/albert_tiny/30k-clean.model", sequence_length=8)
    >>> features = preprocessor(["Hello, World!", "the cat"])
    >>> features["input_ids"].numpy().tolist()
    [[2, 13, 397, 489, 113, 16, 248, 3], [2, 14, 13, 65, 51, 56, 3, 0]]
    >>> features["input_mask"].numpy().tolist()
    [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 0]]
    >>> pair = preprocessor((["Hello"], ["the cat sat"]))
    >>> pair["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 1, 1, 1]]
    >>> features, labels = preprocessor(["the cat"], [1])
    >>> labels.numpy().tolist()
    [1]
    """

    def features(self, x):
        """Builds the features of one text or a pair per example.

        Args:
            x: A string tensor `[batch]` (or a scalar), a tuple `(text_a, text_b)`, or a dict
                with `text_a` (and `text_b`).

        Returns:
            A dict of int32 `input_ids`, `input_mask`, `segment_ids` `[batch, sequence_length]`
            (`[sequence_length]` for scalar inputs).

        Raises:
            ValueError: when a pair does not have two texts or an input is not strings.
        """
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
    """Keras layer that turns article, question and options into multiple-choice features.

    It builds Google's RACE layout: for each option, `[CLS] article [SEP] qa [SEP]`, where qa
    is the question with the option filled in (every "_" replaced by the option, else the
    option appended after a space), cut to its last `max_qa_length` pieces, and the article is
    cut to what then fits. The features (int32 `input_ids`, `input_mask`, `segment_ids`) have
    shape `[batch, num_choices, sequence_length]`. `AlbertTextMultipleChoice` holds one of
    these.

    The input x is a dict with `article` (strings `[batch]`), `question` (`[batch]`) and
    `options` (`[batch, num_choices]`), or the tuple `(article, question, options)`.

    Args:
        spm_model_file: Path of the SentencePiece model. Defaults to `None` (then give
            `vocab_file` or `tokenizer`).
        sequence_length: int. Length of each option's packed features, at least 4.
            Defaults to `512`.
        do_lower_case: Whether the text is lowercased. Defaults to `True`.
        max_qa_length: int. Most pieces kept of the question-option text (its end is kept).
            Defaults to `128`.
        num_choices: int. Number of options per question. Defaults to `4`.
        **kwargs: `tokenizer` (a `GraphTokenizerLayer` to use instead of building one),
            `vocab_file` (a WordPiece vocabulary), or other `keras.layers.Layer` arguments.

    Raises:
        ValueError: when `sequence_length` is below 4; when called, when x is not
            (article, question, options) or holds something other than strings.

    Example:

    >>> import albert_tf
    >>> preprocessor = albert_tf.AlbertMultipleChoicePreprocessor(
    ...     "tests/data/fixtures/albert_tiny/30k-clean.model",
    ...     sequence_length=16, max_qa_length=8, num_choices=2)
    >>> features = preprocessor({
    ...     "article": ["The cat sat on the mat."],
    ...     "question": ["The cat sat _."],
    ...     "options": [["on the mat", "in a tree"]]})
    >>> features["input_ids"].shape
    TensorShape([1, 2, 16])
    >>> features["segment_ids"].numpy()[0, 0].tolist()
    [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]
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
        """Builds the features of every option of each question.

        Args:
            x: A dict with `article`, `question`, `options`, or the tuple
                `(article, question, options)`.

        Returns:
            A dict of int32 `input_ids`, `input_mask`, `segment_ids`
            `[batch, num_choices, sequence_length]` (without `batch` for scalar inputs).

        Raises:
            ValueError: when x is not (article, question, options) or an input is not strings.
        """
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
        """Returns the constructor arguments, for Keras serialisation.

        Returns:
            The base config with `max_qa_length` and `num_choices`.
        """
        config = super().get_config()
        config.update(max_qa_length=self.max_qa_length, num_choices=self.num_choices)
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSpanPreprocessor(_Preprocessor):
    """Keras layer that turns a question and its context into span-extraction features.

    Each example becomes `[CLS] question [SEP] context [SEP]` packed to `input_ids`,
    `input_mask` and `segment_ids` (int32, `[batch, sequence_length]`), as Google's SQuAD
    features: the question is cut to its first `max_query_length` pieces and the context to
    what then fits. Only this FIRST window is built: context past it is never seen, so an
    answer there cannot be found (Google's SQuAD scripts slide several windows over a long
    context; this single-window layer does not). The features also hold `context_offset`, the
    position of the first context piece, and `context_length`, the number of context pieces
    in the window. `AlbertTextSpanExtractor` holds one of these.

    The input x is a dict with `question` and `context` (strings `[batch]`), or the tuple
    `(question, context)`.

    Args:
        spm_model_file: Path of the SentencePiece model. Defaults to `None` (then give
            `vocab_file` or `tokenizer`).
        sequence_length: int. Length of the packed features. Defaults to `384`.
        do_lower_case: Whether the text is lowercased. Defaults to `True`.
        max_query_length: int. Most pieces kept of the question (its start is kept).
            Defaults to `64`.
        **kwargs: `tokenizer` (a `GraphTokenizerLayer` to use instead of building one),
            `vocab_file` (a WordPiece vocabulary), or other `keras.layers.Layer` arguments.

    Raises:
        ValueError: when `sequence_length` is below 4 or below `max_query_length + 4`; when
            called, when x is not (question, context) or holds something other than strings.

    Example:

    >>> import albert_tf
    >>> preprocessor = albert_tf.AlbertSpanPreprocessor(
    ...     "tests/data/fixtures/albert_tiny/30k-clean.model",
    ...     sequence_length=16, max_query_length=4)
    >>> features = preprocessor({"question": ["Where did the cat sit?"],
    ...                          "context": ["The cat sat on the mat."]})
    >>> features["input_ids"].numpy().tolist()
    [[2, 13, 246, 13, 25, 3, 14, 13, 65, 51, 56, 13, 15, 51, 56, 3]]
    >>> features["context_offset"].numpy().tolist(), features["context_length"].numpy().tolist()
    ([6], [9])
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
        """Builds the first-window features of each question and context.

        Args:
            x: A dict with `question` and `context`, or the tuple `(question, context)`.

        Returns:
            A dict of int32 `input_ids`, `input_mask`, `segment_ids` `[batch, sequence_length]`
            and `context_offset`, `context_length` `[batch]` (without `batch` for scalars).

        Raises:
            ValueError: when x is not (question, context) or an input is not strings.
        """
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
        """Returns the constructor arguments, for Keras serialisation.

        Returns:
            The base config with `max_query_length`.
        """
        config = super().get_config()
        config.update(max_query_length=self.max_query_length)
        return config
