"""The task models on raw text: AlbertClassifier, AlbertMultipleChoice and AlbertSquadV1 with a
preprocessor inside (see keras_api.base), so each trains, evaluates, predicts and exports from
strings. Their variables and variable names are those of the task models, so the task models'
checkpoints load into them unchanged."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.keras_api import data
from albert_tf.keras_api.base import TextTaskMixin
from albert_tf.modeling.finetuning_models import AlbertClassifier, AlbertMultipleChoice
from albert_tf.modeling.squad_models import AlbertSquadV1
from albert_tf.tasks.metrics import best_threshold
from albert_tf.tasks.squad.alignment import tokenize_paragraph
from albert_tf.text.keras_preprocessors import (
    AlbertMultipleChoicePreprocessor,
    AlbertSpanPreprocessor,
    AlbertTextPreprocessor,
)
from albert_tf.text.tokenization import FullTokenizer

__all__ = ["AlbertTextClassifier", "AlbertTextMultipleChoice", "AlbertTextSpanExtractor"]

_TEXT = lambda name: tf.TensorSpec([None], tf.string, name=name)


def _column(x, key, index):
    """Returns one input column of in-memory x (a dict by key, a tuple by position) as a NumPy
    array; raises ValueError for a tf.data.Dataset."""
    if isinstance(x, tf.data.Dataset):
        raise ValueError(
            "this needs the inputs in memory (lists, arrays, pandas), not a tf.data.Dataset"
        )
    col = x[key] if isinstance(x, dict) else x[index]
    return np.asarray(getattr(col, "values", col))


def _text(value):
    """A str of a str or UTF-8 bytes value."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTextClassifier(TextTaskMixin, AlbertClassifier):
    """An end-to-end ALBERT text classifier that trains and predicts on raw strings.

    It is albert_tf's `AlbertClassifier` (the model Google's classifier scripts fine-tune) with
    an `AlbertTextPreprocessor` inside, so `fit`, `evaluate`, `predict` and `export` take
    strings. keras-hub's `AlbertTextClassifier` is built from `(backbone, num_classes,
    preprocessor)`; this one is built from `(config, num_labels)` or with `from_pretrained`,
    and keeps Google's variable names, so every checkpoint albert_tf's converters and drivers
    write loads into it.

    The input x is strings `[batch]`, or a pair `(text_a, text_b)` of string arrays (or a dict
    with `text_a`, `text_b`). Labels y are class ids `[batch]`; with `is_regression` floats
    (one output, squared error, as STS-B); with `multi_label` 0/1 `[batch, num_labels]` (a
    sigmoid and binary cross-entropy per label). `predict` returns `logits` and `probabilities`
    (`predictions` for regression) and adds `label_ids`, the argmax (single-label
    classification), or with `multi_label` `label_mask`, the labels whose probability is at
    least `threshold` (set it on a dev set with `choose_threshold`). `compile()` defaults to
    Google's AdamW recipe with learning rate 2e-5; a `.keras` file saves the tokenizer with
    the weights.

    Args:
        config: An `AlbertConfig` (or its dict) of the encoder.
        num_labels: int. Number of classes (1 for regression; the number of labels for
            multi-label). Defaults to `2`.
        dropout_prob: float. Dropout on the pooled output before the classification layer.
            Defaults to `0.1`.
        is_regression: Whether the model regresses one float (needs `num_labels=1`).
            Defaults to `False`.
        preprocessor: An `AlbertTextPreprocessor` (or its serialised config), or `None` for a
            model that takes only feature dicts. Defaults to `None`.
        text_pair: Whether the exported SavedModel's `serve` takes a pair of strings
            (`text_a`, `text_b`) instead of one. `fit` and `predict` accept pairs either way.
            Defaults to `False`.
        multi_label: Whether each example may have several labels (sigmoid per label).
            Defaults to `False`.
        threshold: float. Probability from which `predict` marks a label in `label_mask`
            (multi-label only). Defaults to `0.5`.
        label_names: list of str, or None. The class names in label-id order. With them `fit`
            and `evaluate` take string labels (or ids) and `predict` adds `labels`, the names;
            without them, the first `fit` on string labels sets them to the sorted distinct
            labels (there must be `num_labels` of them). Saved in `.keras` files and exports.
            Defaults to `None`.
        **kwargs: Other `keras.Model` arguments, such as `name`.

    Raises:
        ValueError: when `is_regression` is set with `num_labels` other than 1 or together
            with `multi_label`, or (`InputError`) when the preprocessor's `sequence_length`
            exceeds the config's `max_position_embeddings`.

    Example:

    >>> import albert_tf
    >>> classifier = albert_tf.AlbertTextClassifier.from_pretrained(
    ...     "tests/data/fixtures/albert_tiny", num_labels=2)
    >>> classifier.compile()
    >>> texts = ["a good film", "a bad film", "great acting", "awful plot"]
    >>> history = classifier.fit(texts, [1, 0, 1, 0], batch_size=2, epochs=1, verbose=0)
    >>> sorted(history.history)
    ['accuracy', 'loss']
    >>> outputs = classifier.predict(["a good film", "awful plot"], verbose=0)
    >>> sorted(outputs)
    ['label_ids', 'logits', 'probabilities']
    >>> outputs["probabilities"].shape, outputs["label_ids"].shape
    ((2, 2), (2,))
    """

    preprocessor_class = AlbertTextPreprocessor
    config_args = AlbertClassifier.config_args + ("text_pair", "threshold")

    def __init__(
        self,
        config,
        num_labels=2,
        dropout_prob=0.1,
        is_regression=False,
        *,
        preprocessor=None,
        text_pair=False,
        multi_label=False,
        threshold=0.5,
        label_names=None,
        **kwargs,
    ):
        kwargs.setdefault("name", "albert_text_classifier")
        super().__init__(
            config,
            num_labels,
            dropout_prob,
            is_regression,
            multi_label=multi_label,
            label_names=label_names,
            **kwargs,
        )
        self.text_pair = bool(text_pair)
        self.threshold = float(threshold)
        self._set_preprocessor(preprocessor)

    def choose_threshold(self, x, y, batch_size=None) -> float:
        """Sets `threshold` to the value with the best micro F1 on (x, y), a dev set.

        For multi-label classifiers: `predict` then marks the labels whose probability is at
        least this threshold.

        Args:
            x: Raw texts (in memory or a dataset, as for `predict`).
            y: 0/1 labels `[batch, num_labels]`.
            batch_size: int. Batch size of in-memory x. Defaults to `None`: 32.

        Returns:
            The chosen threshold, a float.
        """
        probs = self.predict(x, batch_size=batch_size, verbose=0)["probabilities"]
        self.threshold = best_threshold(probs, np.asarray(y))
        return self.threshold

    def text_input_signature(self):
        """Returns the raw-text serving signature: one string tensor, or two with text_pair.

        Returns:
            A list with the `tf.TensorSpec` structure `export` serves.
        """
        if self.text_pair:
            return [(_TEXT("text_a"), _TEXT("text_b"))]
        return [_TEXT("text")]

    def encode_labels(self, y):
        """Checks the labels and maps names to ids, before any tracing.

        Args:
            y: Class ids or names `[batch]` (0/1 `[batch, num_labels]` for multi-label, floats
                for regression), or None.

        Returns:
            The labels as the model trains on them.

        Raises:
            InputError: A label that is no class of the model: an id outside
                `0..num_labels-1`, a name not in `label_names`, or (without `label_names`)
                string labels whose distinct count is not `num_labels`.
        """
        if y is None or self.is_regression or self.multi_label or isinstance(y, tf.data.Dataset):
            return y
        values = np.asarray(getattr(y, "values", y)).reshape(-1)
        if values.dtype.kind in "USO":
            return self._ids_of_names([_text(v) for v in values])
        if values.dtype.kind == "f" and not np.all(np.mod(values, 1) == 0):
            raise InputError(f"labels must be class ids or names, got {values[:3].tolist()}")
        ids = values.astype("int64")
        bad = ids[(ids < 0) | (ids >= self.num_labels)]
        if bad.size:
            raise InputError(
                f"label {int(bad[0])} is out of range: the model has num_labels="
                f"{self.num_labels} (ids 0..{self.num_labels - 1})"
            )
        return ids

    def _ids_of_names(self, names):
        if self.label_names is None:
            found = sorted(set(names))
            if len(found) != self.num_labels:
                raise InputError(
                    f"the labels hold {len(found)} distinct names {found[:8]} but the model "
                    f"has num_labels={self.num_labels}; pass label_names=[...] (one per class)"
                )
            self.label_names = found
        index = {n: i for i, n in enumerate(self.label_names)}
        unknown = [n for n in names if n not in index]
        if unknown:
            raise InputError(
                f"label {unknown[0]!r} is not one of the model's {self.num_labels} "
                f"label_names {self.label_names}"
            )
        return np.asarray([index[n] for n in names], "int64")

    def _postprocess(self, x, outputs):
        if self.multi_label:
            outputs["label_mask"] = outputs["probabilities"] >= self.threshold
        elif not self.is_regression:
            outputs["label_ids"] = np.argmax(outputs["probabilities"], axis=-1)
            if self.label_names:
                outputs["labels"] = np.asarray(self.label_names, object)[outputs["label_ids"]]
        return outputs


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTextMultipleChoice(TextTaskMixin, AlbertMultipleChoice):
    """An end-to-end ALBERT multiple-choice model (RACE) that trains and predicts on raw strings.

    It is albert_tf's `AlbertMultipleChoice` with an `AlbertMultipleChoicePreprocessor` inside,
    which packs each option in Google's RACE layout (`[CLS] article [SEP] question-option
    [SEP]`). The input x is a dict (or tuple) of `article` (strings `[batch]`), `question`
    (`[batch]`) and `options` (`[batch, num_choices]`); labels y are the right options'
    indices `[batch]` (e.g. `model.fit(x, [0, 0])` trains on the example below). `predict`
    returns `logits` and `probabilities` `[batch, num_choices]` and adds `choice`, the index
    of the chosen option; `predict_options` gives its text. `compile()` defaults to Google's
    RACE recipe, AdamW with learning rate 1e-5.

    Args:
        config: An `AlbertConfig` (or its dict) of the encoder.
        num_choices: int. Number of options per question. Defaults to `4`.
        dropout_prob: float. Dropout on the pooled output before the scoring layer.
            Defaults to `0.1`.
        preprocessor: An `AlbertMultipleChoicePreprocessor` with the same `num_choices` (or its
            serialised config), or `None` for a model that takes only feature dicts.
            Defaults to `None`.
        **kwargs: Other `keras.Model` arguments, such as `name`.

    Raises:
        ValueError: when the preprocessor packs another number of choices, or (`InputError`)
            when its `sequence_length` exceeds the config's `max_position_embeddings`.

    Example:

    >>> import albert_tf
    >>> model = albert_tf.AlbertTextMultipleChoice.from_pretrained(
    ...     "tests/data/fixtures/albert_tiny", num_choices=2)
    >>> x = {"article": ["The cat sat on the mat.", "Tom has a red car."],
    ...      "question": ["Where did the cat sit?", "Tom's car is _."],
    ...      "options": [["on the mat", "in a tree"], ["red", "blue"]]}
    >>> outputs = model.predict(x, verbose=0)
    >>> outputs["probabilities"].shape, outputs["choice"].shape
    ((2, 2), (2,))
    >>> model.chosen_options(x, [1, 0])
    ['in a tree', 'red']
    """

    preprocessor_class = AlbertMultipleChoicePreprocessor
    preprocessor_args = ("sequence_length", "max_qa_length")
    default_learning_rate = 1e-5  # Google's RACE recipe

    def __init__(self, config, num_choices=4, dropout_prob=0.1, preprocessor=None, **kwargs):
        kwargs.setdefault("name", "albert_text_multiple_choice")
        super().__init__(config, num_choices, dropout_prob, **kwargs)
        if isinstance(preprocessor, dict):
            preprocessor = keras.saving.deserialize_keras_object(preprocessor)
        if preprocessor is not None and preprocessor.num_choices != num_choices:
            raise ValueError(
                f"the preprocessor packs {preprocessor.num_choices} choices, the "
                f"model scores {num_choices}"
            )
        self._set_preprocessor(preprocessor)

    @classmethod
    def from_pretrained(cls, path, *, num_choices=4, preprocessor_args=None, **kwargs):
        """Builds the model and its preprocessor from pretrained files.

        As `TextTaskMixin.from_pretrained`, with `num_choices` given to both the model and
        the preprocessor.

        Args:
            path: A Google release folder, a run's output folder, or a `.keras` file.
            num_choices: int. Number of options per question. Defaults to `4`.
            preprocessor_args: dict of further preprocessor arguments. Defaults to `None`.
            **kwargs: The other arguments of `TextTaskMixin.from_pretrained` (e.g.
                `sequence_length`, `max_qa_length`, `spm_model_file`).

        Returns:
            An `AlbertTextMultipleChoice`, its encoder weights loaded.
        """
        args = {"num_choices": num_choices, **(preprocessor_args or {})}
        return super().from_pretrained(
            path, num_choices=num_choices, preprocessor_args=args, **kwargs
        )

    def text_input_signature(self):
        """Returns the raw-text serving signature: `article`, `question`, `options`.

        Returns:
            A list with one dict of `tf.TensorSpec`.
        """
        options = tf.TensorSpec([None, self.num_choices], tf.string, name="options")
        return [{"article": _TEXT("article"), "question": _TEXT("question"), "options": options}]

    def _postprocess(self, x, outputs):
        # from the logits, not the probabilities: near-tied logits (options that truncate to
        # the same input) can round to equal probabilities, whose argmax would then disagree
        outputs["choice"] = np.argmax(outputs["logits"], axis=-1)
        return outputs

    def predict_options(self, x, batch_size=None, **kwargs):
        """Predicts and returns the text of the chosen option of each question.

        Args:
            x: The inputs, in memory (a dict or tuple of lists or arrays, as for `predict`).
            batch_size: int. Batch size. Defaults to `None`: 32.
            **kwargs: Other `predict` arguments (`verbose`, ...).

        Returns:
            A list of str, one option per question.

        Raises:
            ValueError: when x is a `tf.data.Dataset` (raised while reading the options).
        """
        return self.chosen_options(x, self.predict(x, batch_size=batch_size, **kwargs))

    @staticmethod
    def chosen_options(x, choice):
        """Returns the option texts of x picked by `choice`.

        Args:
            x: The inputs, in memory (a dict with `options`, or a tuple whose third item is
                the options).
            choice: Indices `[batch]`, or `predict`'s output dict (its `choice` is used).

        Returns:
            A list of str, one option per question.

        Raises:
            ValueError: when x is a `tf.data.Dataset`.
        """
        if isinstance(choice, dict):
            choice = choice["choice"]
        options = _column(x, "options", 2)
        return [_text(options[i, c]) for i, c in enumerate(np.asarray(choice))]


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTextSpanExtractor(TextTaskMixin, AlbertSquadV1):
    """An end-to-end ALBERT extractive question-answering model (SQuAD v1) on raw strings.

    It is albert_tf's `AlbertSquadV1` with an `AlbertSpanPreprocessor` inside. The input x is
    a dict (or tuple) of `question` and `context` strings `[batch]`. Only the FIRST window of
    each context is read (see `AlbertSpanPreprocessor`): an answer past it cannot be found.
    `predict` returns `start_logits` and `end_logits` and adds `answer_text`, `answer_start`
    and `answer_end`: the best span of at most `max_answer_length` pieces, as character
    offsets into the context (end exclusive; -1 where the window holds no context). The
    answers are aligned to the text in Python, so `predict` needs x in memory. `fit` takes
    feature dicts with `start_positions` and `end_positions` (Google's SQuAD records), not raw
    text. `compile()` defaults to Google's AdamW recipe with learning rate 3e-5.

    Args:
        config: An `AlbertConfig` (or its dict) of the encoder.
        max_answer_length: int. Longest answer `predict` returns, in pieces. Defaults to `30`.
        preprocessor: An `AlbertSpanPreprocessor` (or its serialised config), or `None` for a
            model that takes only feature dicts. Defaults to `None`.
        **kwargs: Other `keras.Model` arguments, such as `name`.

    Raises:
        InputError: (a `ValueError`) when the preprocessor's `sequence_length` exceeds the
            config's `max_position_embeddings`.

    Example:

    >>> import albert_tf
    >>> model = albert_tf.AlbertTextSpanExtractor.from_pretrained(
    ...     "tests/data/fixtures/albert_tiny", sequence_length=32)
    >>> model.preprocessor.sequence_length, model.preprocessor.max_query_length
    (32, 5)
    >>> context = "The cat sat on the mat."
    >>> outputs = model.predict({"question": ["Where did the cat sit?"], "context": [context]},
    ...                         verbose=0)
    >>> outputs["start_logits"].shape
    (1, 32)
    >>> start, end = outputs["answer_start"][0], outputs["answer_end"][0]
    >>> outputs["answer_text"][0] == context[start:end]
    True
    """

    preprocessor_class = AlbertSpanPreprocessor
    preprocessor_args = ("sequence_length", "max_query_length")
    default_learning_rate = 3e-5
    config_args = ("max_answer_length",)

    def __init__(self, config, max_answer_length=30, preprocessor=None, **kwargs):
        kwargs.setdefault("name", "albert_text_span_extractor")
        super().__init__(config, **kwargs)
        self.max_answer_length = int(max_answer_length)
        self._set_preprocessor(preprocessor)
        self._python_tokenizer = None

    def call(self, inputs, training=None):
        """Runs the model, passing the context's window position through to the outputs.

        Args:
            inputs: A feature dict, or raw `question` / `context` strings.
            training: Whether dropout is on. Defaults to `None`.

        Returns:
            A dict with `start_logits`, `end_logits` and, when the features have them,
            `context_offset` and `context_length`.
        """
        if not data.is_features(inputs):
            inputs = self._require_preprocessor()(inputs)
        outputs = super().call(inputs, training=training)
        for key in ("context_offset", "context_length"):
            if key in inputs:
                outputs[key] = inputs[key]
        return outputs

    def text_input_signature(self):
        """Returns the raw-text serving signature: `question`, `context`.

        Returns:
            A list with one dict of `tf.TensorSpec`.
        """
        return [{"question": _TEXT("question"), "context": _TEXT("context")}]

    def _tokenizer(self):
        """A Python FullTokenizer on the preprocessor's SentencePiece bytes or WordPiece
        vocabulary (for alignment)."""
        if self._python_tokenizer is None:
            graph = self._require_preprocessor().graph_tokenizer
            if hasattr(graph, "vocab_text"):
                with fileio.scratch_file(graph.vocab_text.encode("utf-8"), "vocab.txt") as path:
                    self._python_tokenizer = FullTokenizer(
                        vocab_file=path, do_lower_case=graph.do_lower_case
                    )
            else:
                with fileio.scratch_file(graph.model_proto, "spm.model") as path:
                    self._python_tokenizer = FullTokenizer(spm_model_file=path)
        return self._python_tokenizer

    def _best_span(self, start_logits, end_logits, offset, length):
        """(first, last) context pieces of the best span in the window, or None."""
        if length <= 0:
            return None
        s = start_logits[offset : offset + length]
        e = end_logits[offset : offset + length]
        scores = s[:, None] + e[None, :]
        i, j = np.indices(scores.shape)
        scores = np.where((j >= i) & (j - i < self.max_answer_length), scores, -np.inf)
        first, last = np.unravel_index(np.argmax(scores), scores.shape)
        return int(first), int(last)

    def _postprocess(self, x, outputs):
        contexts = _column(x, "context", 1)
        lower = self.preprocessor.do_lower_case
        texts, starts, ends = [], [], []
        for i, context in enumerate(contexts):
            context = _text(context)
            span = self._best_span(
                outputs["start_logits"][i],
                outputs["end_logits"][i],
                int(outputs["context_offset"][i]),
                int(outputs["context_length"][i]),
            )
            if span is None:
                texts.append("")
                starts.append(-1)
                ends.append(-1)
                continue
            para = tokenize_paragraph(context, self._tokenizer(), do_lower_case=lower)
            start, end = para.starts[span[0]], para.ends[span[1]]
            answer = context[start:end]
            start += len(answer) - len(answer.lstrip())
            end -= len(answer) - len(answer.rstrip())
            texts.append(context[start:end])
            starts.append(start)
            ends.append(max(end, start))
        outputs.update(answer_text=texts, answer_start=np.array(starts), answer_end=np.array(ends))
        return outputs
