"""The task models on raw text: AlbertClassifier, AlbertMultipleChoice and AlbertSquadV1 with a
preprocessor inside (see keras_api.base), so each trains, evaluates, predicts and exports from
strings. Variables and names are the task models' own, so their checkpoints load as they are."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from albert_tf.core import fileio
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
    """One input column of in-memory x (a dict by key, a tuple by position) as a NumPy array."""
    if isinstance(x, tf.data.Dataset):
        raise ValueError(
            "this needs the inputs in memory (lists, arrays, pandas), not a tf.data.Dataset"
        )
    col = x[key] if isinstance(x, dict) else x[index]
    return np.asarray(getattr(col, "values", col))


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTextClassifier(TextTaskMixin, AlbertClassifier):
    """AlbertClassifier on raw text: x is strings [batch], or (text_a, text_b) with text_pair.

    `predict` adds `label_ids`, the argmax (classification only). With `multi_label=True` y is
    0/1 [batch, num_labels] (a sigmoid and binary cross-entropy per label) and `predict` adds
    `label_mask`, the labels with probability >= `threshold` (set it from dev with
    `choose_threshold`).
    """

    preprocessor_class = AlbertTextPreprocessor
    config_args = AlbertClassifier.config_args + ("text_pair", "threshold")

    def __init__(
        self,
        config,
        num_labels=2,
        dropout_prob=0.1,
        is_regression=False,
        preprocessor=None,
        text_pair=False,
        multi_label=False,
        threshold=0.5,
        **kwargs,
    ):
        kwargs.setdefault("name", "albert_text_classifier")
        super().__init__(
            config, num_labels, dropout_prob, is_regression, multi_label=multi_label, **kwargs
        )
        self.text_pair = bool(text_pair)
        self.threshold = float(threshold)
        self._set_preprocessor(preprocessor)

    def choose_threshold(self, x, y, batch_size=None) -> float:
        """Set `threshold` to the one with the best micro F1 on (x, y) (a dev set); returns it."""
        probs = self.predict(x, batch_size=batch_size, verbose=0)["probabilities"]
        self.threshold = best_threshold(probs, np.asarray(y))
        return self.threshold

    def text_input_signature(self):
        if self.text_pair:
            return [(_TEXT("text_a"), _TEXT("text_b"))]
        return [_TEXT("text")]

    def _postprocess(self, x, outputs):
        if self.multi_label:
            outputs["label_mask"] = outputs["probabilities"] >= self.threshold
        elif not self.is_regression:
            outputs["label_ids"] = np.argmax(outputs["probabilities"], axis=-1)
        return outputs


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTextMultipleChoice(TextTaskMixin, AlbertMultipleChoice):
    """AlbertMultipleChoice on raw text: x is a dict (or tuple) of `article` [batch],
    `question` [batch], `options` [batch, num_choices], packed in Google's RACE layout.

    `predict` adds `choice`, the chosen option's index; `predict_options` gives its text.
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
        args = {"num_choices": num_choices, **(preprocessor_args or {})}
        return super().from_pretrained(
            path, num_choices=num_choices, preprocessor_args=args, **kwargs
        )

    def text_input_signature(self):
        options = tf.TensorSpec([None, self.num_choices], tf.string, name="options")
        return [{"article": _TEXT("article"), "question": _TEXT("question"), "options": options}]

    def _postprocess(self, x, outputs):
        # from the logits, not the probabilities: near-tied logits (options that truncate to
        # the same input) can round to equal probabilities, whose argmax would then disagree
        outputs["choice"] = np.argmax(outputs["logits"], axis=-1)
        return outputs

    def predict_options(self, x, batch_size=None, **kwargs):
        """The text of the chosen option of each question (x in memory)."""
        return self.chosen_options(x, self.predict(x, batch_size=batch_size, **kwargs))

    @staticmethod
    def chosen_options(x, choice):
        """The option texts of x (in memory) picked by `choice` (indices, or predict's output)."""
        if isinstance(choice, dict):
            choice = choice["choice"]
        options = _column(x, "options", 2)
        return [_text(options[i, c]) for i, c in enumerate(np.asarray(choice))]


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTextSpanExtractor(TextTaskMixin, AlbertSquadV1):
    """AlbertSquadV1 on raw text: x is a dict (or tuple) of `question`, `context` strings.

    Only the FIRST window of each context is read (AlbertSpanPreprocessor); an answer past it
    cannot be found. `predict` adds `answer_text`, `answer_start` and `answer_end` (character
    offsets into the context, end exclusive; -1 where the window holds no context), the best
    span of at most `max_answer_length` pieces; aligned in Python (x in memory).
    `fit` takes feature dicts with `start_positions` / `end_positions`.
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
        if not data.is_features(inputs):
            inputs = self._require_preprocessor()(inputs)
        outputs = super().call(inputs, training=training)
        for key in ("context_offset", "context_length"):
            if key in inputs:
                outputs[key] = inputs[key]
        return outputs

    def text_input_signature(self):
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
