"""Fine-tuning models: sequence classification and regression (GLUE), multiple choice (RACE)
and token classification (NER).

Each model carries its own loss and metrics (`AlbertTaskModel`), so it trains with
`compile(optimizer)` and `fit` on feature dicts, and names its head variables as Google's
scripts did (`output_weights` [C, H] and `output_bias` [C] at the root scope).
"""

import keras
from keras import ops
import tensorflow as tf

from albert_tf.modeling.albert_model import AlbertModel
from albert_tf.modeling.heads import PooledClassifierHead
from albert_tf.modeling.losses import replica_mean
from albert_tf.modeling.model_base import (
    AlbertTaskModel,
    ConfigSerializable,
    ServingSignature,
    as_config,
)
from albert_tf.modeling.names import pooled_head_variable_map


def _labels(features, labels, key="label_ids"):
    if labels is not None:
        return labels
    if key not in features:
        raise ValueError(f"no labels: pass y to fit, or a '{key}' feature")
    return features[key]


def softmax_nll_and_correct(logits, labels):
    """Per-example softmax cross-entropy and 0/1 correctness of the argmax, [B] each."""
    ids = ops.cast(labels, "int32")
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    nll = -ops.squeeze(ops.take_along_axis(log_probs, ids[:, None], axis=-1), -1)
    correct = ops.cast(ops.equal(ops.cast(ops.argmax(log_probs, -1), "int32"), ids), "float32")
    return nll, correct


def _example_weights(features, n):
    """is_real_example (0 for the fake examples that pad eval sets to whole batches), else 1."""
    w = features.get("is_real_example") if isinstance(features, dict) else None
    return ops.ones((n,), "float32") if w is None else ops.reshape(ops.cast(w, "float32"), (-1,))


class _PooledTaskModel(ConfigSerializable, ServingSignature, AlbertTaskModel):
    """AlbertModel + a PooledClassifierHead with Google's root-scope head names."""

    head_scope = ""

    def __init__(self, config, num_outputs, dropout_prob=0.1, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)
        self.dropout_prob = dropout_prob
        self.albert = AlbertModel(self.config)
        self.classifier = PooledClassifierHead(
            self.config, num_outputs, dropout_prob, name="classifier"
        )
        self.classifier.build()

    def _per_example(self, features, labels, outputs):
        """(loss, score) per example; score is what `accuracy_metric` averages."""
        raise NotImplementedError

    def task_loss(self, features, labels, outputs):
        """Mean loss over real examples (fakes padding an eval batch have weight 0)."""
        loss, _ = self._per_example(features, labels, outputs)
        w = _example_weights(features, ops.shape(loss)[0])
        return replica_mean(ops.sum(w * loss), ops.sum(w))

    def update_task_metrics(self, features, labels, outputs):
        _, score = self._per_example(features, labels, outputs)
        self.accuracy_metric.update_state(score, _example_weights(features, ops.shape(score)[0]))

    def original_head_variables(self):
        return pooled_head_variable_map(self.classifier, self.head_scope)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(_PooledTaskModel):
    """ALBERT with a classification or regression head on the pooled output (GLUE tasks).

    The head is dropout then a dense layer to `num_labels` logits, stored as Google's
    `run_classifier.py` stores it (`output_weights` [C, H], `output_bias` [C]), so its
    checkpoints load in both directions. This is the model the GLUE driver fine-tunes; for a
    model that takes raw text, see `AlbertTextClassifier`.

    Three kinds of task:

    * classification (default): softmax cross-entropy; outputs `logits` and `probabilities`
      [B, num_labels]; metric `accuracy`.
    * regression (`is_regression=True`, e.g. STS-B): one output, squared error; outputs
      `logits` [B, 1] and `predictions` [B]; metric `mse`.
    * multi-label (`multi_label=True`): a sigmoid per label and binary cross-entropy against
      0/1 targets [B, num_labels] (the `label_vector` feature); outputs `logits` and
      `probabilities`; metric `exact_match`, the share of rows whose whole label set is right
      at a threshold of 0.5.

    The model carries its loss: `compile(optimizer)` then `fit(features, labels)`, or
    `fit(features)` with the labels in the feature dict (`label_ids`, or `label_vector` for
    multi-label). Examples whose `is_real_example` feature is 0 (the fakes that pad an eval set
    to whole batches) get weight 0 in the loss and metric.

    Args:
        config: `AlbertConfig`, or a dict of its fields. The encoder's hyperparameters.
        num_labels: int. The number of classes (or labels, for multi-label); 1 for regression.
        dropout_prob: float. The dropout rate on the pooled output during training. Default 0.1.
        is_regression: bool. Predict one real value with a squared-error loss. Default False.
        multi_label: bool. Predict each label independently (sigmoid and binary
            cross-entropy). Default False.
        label_names: list of str, or None. The class names in label-id order, saved with the
            model (`.keras`, exports, Hugging Face `id2label`). Default None (ids only).
        **kwargs: Keyword arguments for `keras.Model`, such as `name` (default
            "albert_classifier").

    Raises:
        ValueError: when `is_regression` is set with `num_labels` other than 1, or together
            with `multi_label`, or when `label_names` does not have `num_labels` entries.

    Example:

    >>> import numpy as np, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> model = albert_tf.AlbertClassifier(config, num_labels=3)
    >>> features = {"input_ids": np.array([[2, 10, 11, 3], [2, 12, 3, 0]]),
    ...             "input_mask": np.array([[1, 1, 1, 1], [1, 1, 1, 0]])}
    >>> outputs = model.predict(features, verbose=0)
    >>> outputs["probabilities"].shape, outputs["probabilities"].sum(axis=-1).round(3)
    ((2, 3), array([1., 1.], dtype=float32))
    >>> model.compile(optimizer=albert_tf.create_optimizer(1e-3, num_train_steps=10,
    ...                                                    num_warmup_steps=1))
    >>> history = model.fit(features, np.array([0, 2]), batch_size=2, epochs=2, verbose=0)
    >>> sorted(history.history)
    ['accuracy', 'loss']

    A regression head (STS-B):

    >>> regressor = albert_tf.AlbertClassifier(config, num_labels=1, is_regression=True)
    >>> tuple(regressor(features)["predictions"].shape)
    (2,)
    """

    config_args = ("num_labels", "dropout_prob", "is_regression", "multi_label", "label_names")

    def __init__(
        self,
        config,
        num_labels,
        dropout_prob=0.1,
        is_regression=False,
        multi_label=False,
        label_names=None,
        **kwargs,
    ):
        kwargs.setdefault("name", "albert_classifier")
        if is_regression and num_labels != 1:
            raise ValueError("a regression classifier has num_labels=1")
        if is_regression and multi_label:
            raise ValueError("a classifier is either regression or multi-label, not both")
        if label_names is not None and len(label_names) != num_labels:
            raise ValueError(f"{len(label_names)} label_names for num_labels={num_labels}")
        self.label_names = None if label_names is None else [str(n) for n in label_names]
        super().__init__(config, num_labels, dropout_prob, **kwargs)
        self.num_labels = num_labels
        self.is_regression = is_regression
        self.multi_label = bool(multi_label)
        self.accuracy_metric = keras.metrics.Mean(
            name="mse" if is_regression else "exact_match" if multi_label else "accuracy"
        )
        self.built = True

    def call(self, inputs, training=None):
        pooled = self.albert(inputs, training=training)["pooled_output"]
        logits = self.classifier(pooled, training=training)
        if self.is_regression:
            return {"logits": logits, "predictions": logits[:, 0]}
        if self.multi_label:
            return {"logits": logits, "probabilities": ops.sigmoid(logits)}
        return {"logits": logits, "probabilities": ops.softmax(logits, axis=-1)}

    def serving_outputs(self, outputs):
        """What an export serves: the outputs, plus `labels` (the class names) for a
        single-label classifier with `label_names`.

        Args:
            outputs: The model's outputs.

        Returns:
            The outputs to serve.
        """
        if not self.label_names or self.is_regression or self.multi_label:
            return outputs
        names = tf.constant(self.label_names)
        ids = ops.argmax(outputs["probabilities"], axis=-1)
        return {**outputs, "labels": tf.gather(names, ids)}

    def _per_example(self, features, labels, outputs):
        if self.multi_label:
            y = ops.cast(_labels(features, labels, "label_vector"), "float32")
            logits = ops.cast(outputs["logits"], "float32")
            # sigmoid cross-entropy, stable form: max(x, 0) - x·y + log(1 + exp(-|x|))
            bce = ops.maximum(logits, 0.0) - logits * y + ops.log1p(ops.exp(-ops.abs(logits)))
            right = ops.all(ops.equal(logits >= 0.0, y >= 0.5), axis=-1)
            return ops.mean(bce, axis=-1), ops.cast(right, "float32")
        labels = ops.reshape(_labels(features, labels), (-1,))
        if self.is_regression:
            diff = outputs["predictions"] - ops.cast(labels, "float32")
            return diff * diff, diff * diff
        return softmax_nll_and_correct(outputs["logits"], labels)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(_PooledTaskModel):
    """ALBERT for multiple-choice questions (RACE): one score per choice, softmax over choices.

    Each choice is encoded as its own sequence, `[CLS] article [SEP] question + option [SEP]`;
    a dense layer [1, H] on that sequence's pooled output (after dropout) gives its score.
    Inputs are [B, C * L] (Google's flattened records, the choices one after another) or
    [B, C, L]; outputs are `logits` and `probabilities` [B, C]. The loss is softmax
    cross-entropy over the choices, the metric `accuracy`; labels (the index of the right
    choice) come from `y` or the `label_ids` feature, and examples whose `is_real_example` is 0
    get weight 0.

    Args:
        config: `AlbertConfig`, or a dict of its fields. The encoder's hyperparameters.
        num_choices: int. The number of choices per question. Default 4 (RACE).
        dropout_prob: float. The dropout rate on the pooled output during training. Default 0.1.
        **kwargs: Keyword arguments for `keras.Model`, such as `name` (default
            "albert_multiple_choice").

    Example:

    >>> import numpy as np, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> model = albert_tf.AlbertMultipleChoice(config, num_choices=4)
    >>> features = {"input_ids": np.ones((2, 4, 6), "int32")}  # 2 questions, 4 choices
    >>> outputs = model(features)
    >>> tuple(outputs["logits"].shape), outputs["probabilities"].numpy().sum(-1).round(3)
    ((2, 4), array([1., 1.], dtype=float32))
    >>> tuple(model({"input_ids": np.ones((2, 24), "int32")})["logits"].shape)  # flattened
    (2, 4)
    """

    config_args = ("num_choices", "dropout_prob")

    def serving_polymorphic_shapes(self):
        """Google's flattened records: every feature [batch, num_choices · length].

        Returns:
            list: one dict, feature name to its jax2tf shape.
        """
        return [{name: f"(b, {self.num_choices}*t)" for name in self.serving_features}]

    def __init__(self, config, num_choices=4, dropout_prob=0.1, **kwargs):
        kwargs.setdefault("name", "albert_multiple_choice")
        super().__init__(config, 1, dropout_prob, **kwargs)
        self.num_choices = num_choices
        self.accuracy_metric = keras.metrics.Mean(name="accuracy")
        self.built = True

    def call(self, inputs, training=None):
        c = self.num_choices
        flat = {}
        for key in ("input_ids", "input_mask", "segment_ids"):
            if key in inputs:
                x = inputs[key]
                length = x.shape[-1] if x.shape[-1] is not None else ops.shape(x)[-1]
                seq = length if len(x.shape) == 3 else length // c
                flat[key] = ops.reshape(x, (-1, seq))
        pooled = self.albert(flat, training=training)["pooled_output"]
        logits = ops.reshape(self.classifier(pooled, training=training), (-1, c))
        return {"logits": logits, "probabilities": ops.softmax(logits, axis=-1)}

    def _per_example(self, features, labels, outputs):
        return softmax_nll_and_correct(
            outputs["logits"], ops.reshape(_labels(features, labels), (-1,))
        )


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTokenClassifier(_PooledTaskModel):
    """ALBERT with one label per token, for named-entity recognition (NER).

    Dropout then a dense layer on each token's sequence output give logits
    [B, T, num_labels], stored as the root-scope `output_weights` [C, H] and `output_bias` [C]
    of Google's BERT NER recipes; outputs are `logits` and `probabilities`. The loss (softmax
    cross-entropy) and the `accuracy` metric count only the positions whose `label_weights`
    feature is 1 (the first piece of each word; every position when the feature is absent), in
    examples whose `is_real_example` is not 0. Labels [B, T] come from `y` or the `label_ids`
    feature; they may be longer than the inputs (a batch cut to a shorter bucket length).

    Args:
        config: `AlbertConfig`, or a dict of its fields. The encoder's hyperparameters.
        num_labels: int. The number of tags (e.g. 9 for CoNLL-2003's BIO tags).
        dropout_prob: float. The dropout rate on the sequence output during training.
            Default 0.1.
        label_names: list of str, or None. The tag names, in label-id order; saved with the
            model. Default None.
        **kwargs: Keyword arguments for `keras.Model`, such as `name` (default
            "albert_token_classifier").

    Raises:
        ValueError: when `label_names` does not have `num_labels` entries.

    Example:

    >>> import numpy as np, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> model = albert_tf.AlbertTokenClassifier(config, num_labels=3,
    ...                                         label_names=["O", "B-PER", "I-PER"])
    >>> outputs = model({"input_ids": np.ones((2, 8), "int32")})
    >>> tuple(outputs["logits"].shape), tuple(outputs["probabilities"].shape)
    ((2, 8, 3), (2, 8, 3))
    """

    config_args = ("num_labels", "dropout_prob", "label_names")

    def __init__(self, config, num_labels, dropout_prob=0.1, label_names=None, **kwargs):
        kwargs.setdefault("name", "albert_token_classifier")
        super().__init__(config, num_labels, dropout_prob, **kwargs)
        self.num_labels = num_labels
        if label_names is not None and len(label_names) != num_labels:
            raise ValueError(f"{len(label_names)} label_names for num_labels={num_labels}")
        self.label_names = None if label_names is None else list(label_names)
        self.accuracy_metric = keras.metrics.Mean(name="accuracy")
        self.built = True

    def call(self, inputs, training=None):
        sequence = self.albert(inputs, training=training)["sequence_output"]
        logits = self.classifier(sequence, training=training)
        return {"logits": logits, "probabilities": ops.softmax(logits, axis=-1)}

    def _token_terms(self, features, labels, outputs):
        """(nll, correct, weight) per token, flattened: weight is label_weights (first pieces)
        times the example's is_real_example."""
        logits = ops.cast(outputs["logits"], "float32")
        labels = ops.cast(_labels(features, labels), "int32")
        n, t = ops.shape(logits)[0], ops.shape(logits)[1]
        labels = labels[:, :t]  # a bucketed batch: the labels' length may exceed the logits'
        w = features.get("label_weights") if isinstance(features, dict) else None
        w = ops.ones((n, t), "float32") if w is None else ops.cast(w[:, :t], "float32")
        w = w * ops.reshape(_example_weights(features, n), (-1, 1))
        nll, correct = softmax_nll_and_correct(
            ops.reshape(logits, (n * t, -1)), ops.reshape(labels, (-1,))
        )
        return nll, correct, ops.reshape(w, (-1,))

    def task_loss(self, features, labels, outputs):
        """Mean cross-entropy over the labelled positions of the global batch."""
        nll, _, w = self._token_terms(features, labels, outputs)
        return replica_mean(ops.sum(w * nll), ops.sum(w))

    def update_task_metrics(self, features, labels, outputs):
        _, correct, w = self._token_terms(features, labels, outputs)
        self.accuracy_metric.update_state(correct, w)
