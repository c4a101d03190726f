"""SQuAD span-extraction models with Google's heads and variable names.

v1.1 (`AlbertSquadV1`): start/end logits from one [2,H] projection (`cls/squad/output_*`).
v2.0 (`AlbertSquadV2`, XLNet style as in Google's run_squad_v2): masked start logits; end logits
conditioned on the start representation (the gold start in training, a top-k beam over starts ×
ends at inference); an answerability logit from the CLS and start-weighted representations.
"""

import keras
from keras import ops

from albert_tf.modeling.albert_model import AlbertModel
from albert_tf.modeling.common import dense, initializer, layer_norm
from albert_tf.modeling.losses import replica_mean
from albert_tf.modeling.model_base import (
    AlbertTaskModel,
    ConfigSerializable,
    ServingSignature,
    as_config,
)

NEG_INF = -1e30  # Google's p_mask adder for the v2 head


def _positions_nll(log_probs, positions):
    """-log p(gold position) per example; log_probs [B,T], positions [B] or [B,1]."""
    ids = ops.reshape(ops.cast(positions, "int32"), (-1, 1))
    return -ops.squeeze(ops.take_along_axis(log_probs, ids, axis=-1), -1)


def _mean(values):
    return replica_mean(ops.sum(values), ops.cast(ops.shape(values)[0], "float32"))


class _SquadBase(ConfigSerializable, ServingSignature, AlbertTaskModel):
    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)
        self.albert = AlbertModel(self.config)

    def _passthrough(self, inputs, outputs):
        if "unique_ids" in inputs:
            outputs["unique_ids"] = ops.reshape(inputs["unique_ids"], (-1,))
        return outputs


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSquadV1(_SquadBase):
    """ALBERT for SQuAD v1.1 span extraction: a start and an end logit for every token.

    One projection [2, H] of the sequence output (Google's `cls/squad/output_weights` and
    `output_bias`) gives `start_logits` and `end_logits` [B, T]; a `unique_ids` input is passed
    through to the outputs, flattened to [B], so predictions can be matched to their features.
    The loss is the mean of the start and end cross-entropies against the `start_positions` and
    `end_positions` features ([B] or [B, 1]); the metric is `span_loss`.

    Args:
        config: `AlbertConfig`, or a dict of its fields. The encoder's hyperparameters.
        **kwargs: Keyword arguments for `keras.Model`, such as `name` (default
            "albert_squad_v1").

    Example:

    >>> import numpy as np, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> model = albert_tf.AlbertSquadV1(config)
    >>> outputs = model({"input_ids": np.ones((2, 8), "int32"), "unique_ids": np.array([7, 8])})
    >>> {name: tuple(value.shape) for name, value in outputs.items()}
    {'start_logits': (2, 8), 'end_logits': (2, 8), 'unique_ids': (2,)}
    """

    def __init__(self, config, **kwargs):
        kwargs.setdefault("name", "albert_squad_v1")
        super().__init__(config, **kwargs)
        self.output_weights = self.add_weight(
            name="output_weights",
            shape=(2, self.config.hidden_size),
            initializer=initializer(self.config),
        )
        self.output_bias = self.add_weight(name="output_bias", shape=(2,), initializer="zeros")
        self.loss_metric = keras.metrics.Mean(name="span_loss")
        self.built = True

    def call(self, inputs, training=None):
        seq = ops.cast(self.albert(inputs, training=training)["sequence_output"], "float32")
        logits = ops.einsum("bth,oh->bto", seq, ops.cast(self.output_weights, "float32"))
        logits = logits + ops.cast(self.output_bias, "float32")
        return self._passthrough(
            inputs, {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}
        )

    def _example_losses(self, features, outputs):
        start = _positions_nll(
            ops.log_softmax(outputs["start_logits"], -1), features["start_positions"]
        )
        end = _positions_nll(ops.log_softmax(outputs["end_logits"], -1), features["end_positions"])
        return 0.5 * (start + end)

    def task_loss(self, features, labels, outputs):
        return _mean(self._example_losses(features, outputs))

    def update_task_metrics(self, features, labels, outputs):
        self.loss_metric.update_state(self._example_losses(features, outputs))

    def original_head_variables(self):
        return {
            "cls/squad/output_weights": self.output_weights,
            "cls/squad/output_bias": self.output_bias,
        }


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertSquadV2(_SquadBase):
    """ALBERT for SQuAD v2.0: answer spans, with a score for "no answer".

    The head is XLNet's, as in Google's `run_squad_v2.py`: start logits from the sequence
    output; end logits conditioned on the start token's representation (the gold start while
    training, a beam over the `start_n_top` best starts at inference); and an answerability
    logit from the [CLS] representation and the start-probability-weighted representation.
    Positions whose `p_mask` is 1 (the question and special tokens) can be neither start nor
    end. Variable names are Google's (`start_logits/dense`, `end_logits/dense_0`, ...).

    Inputs: those of `AlbertModel` plus int32 `p_mask` [B, T] (required); for training, also
    `start_positions`, `end_positions` and `is_impossible` [B]. Outputs at inference:
    `start_log_probs` [B, T], `start_top_log_probs` and `start_top_index` [B, start_n_top],
    `end_top_log_probs` and `end_top_index` [B, start_n_top * end_n_top] and `cls_logits` [B]
    (plus `unique_ids` when given). The loss is 0.5 * span loss + 0.5 * answerability loss: the
    span loss is the mean of the start and end cross-entropies, the answerability loss the
    sigmoid cross-entropy of `cls_logits` against `is_impossible`. The metrics are `span_loss`
    and `answer_class_loss`.

    Args:
        config: `AlbertConfig`, or a dict of its fields. The encoder's hyperparameters.
        start_n_top: int. The number of best start positions kept at inference. Default 5.
        end_n_top: int. The number of best end positions kept for each start. Default 5.
        dropout_prob: float. The dropout rate in the answerability head during training.
            Default 0.1.
        **kwargs: Keyword arguments for `keras.Model`, such as `name` (default
            "albert_squad_v2").

    Example:

    >>> import numpy as np, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> model = albert_tf.AlbertSquadV2(config, start_n_top=3, end_n_top=2)
    >>> outputs = model({"input_ids": np.ones((2, 8), "int32"),
    ...                  "p_mask": np.array([[0, 1, 1, 0, 0, 0, 0, 1]] * 2)})
    >>> {name: tuple(value.shape) for name, value in outputs.items()}
    {'start_log_probs': (2, 8), 'start_top_log_probs': (2, 3), 'start_top_index': (2, 3),
     'end_top_log_probs': (2, 6), 'end_top_index': (2, 6), 'cls_logits': (2,)}
    >>> sorted(set(outputs["start_top_index"].numpy().ravel()) & {1, 2, 7})  # masked: never
    []
    """

    config_args = ("start_n_top", "end_n_top", "dropout_prob")

    def serving_constraints(self):
        """The beams' top-k need at least `start_n_top` and `end_n_top` positions.

        Returns:
            tuple of str: jax2tf's `polymorphic_constraints`.
        """
        return (f"t >= {max(self.start_n_top, self.end_n_top)}",)

    serving_features = ServingSignature.serving_features + ("p_mask",)

    def __init__(self, config, start_n_top=5, end_n_top=5, dropout_prob=0.1, **kwargs):
        kwargs.setdefault("name", "albert_squad_v2")
        super().__init__(config, **kwargs)
        c = self.config
        h = c.hidden_size
        self.start_n_top, self.end_n_top, self.dropout_prob = start_n_top, end_n_top, dropout_prob
        self.start_dense = dense(1, c, "start_logits_dense")
        self.end_dense_0 = dense(h, c, "end_logits_dense_0", activation="tanh")
        self.end_layer_norm = layer_norm("end_logits_layer_norm")
        self.end_dense_1 = dense(1, c, "end_logits_dense_1")
        self.answer_dense_0 = dense(h, c, "answer_class_dense_0", activation="tanh")
        self.answer_dropout = keras.layers.Dropout(dropout_prob)
        self.answer_dense_1 = keras.layers.Dense(
            1, use_bias=False, kernel_initializer=initializer(c), name="answer_class_dense_1"
        )
        self.start_dense.build((None, None, h))
        self.end_dense_0.build((None, None, 2 * h))
        self.end_layer_norm.build((None, None, h))
        self.end_dense_1.build((None, None, h))
        self.answer_dense_0.build((None, 2 * h))
        self.answer_dense_1.build((None, h))
        self.loss_metric = keras.metrics.Mean(name="span_loss")
        self.cls_loss_metric = keras.metrics.Mean(name="answer_class_loss")
        self.built = True

    def _end_log_probs(self, seq, start_features, p_mask):
        """seq [B,T,H], start_features [B,T,H] (or [B,K,T,H]) → masked end log-probs over T."""
        x = self.end_dense_0(ops.concatenate([seq, start_features], axis=-1))
        x = ops.cast(self.end_layer_norm(x), "float32")
        logits = ops.squeeze(ops.cast(self.end_dense_1(x), "float32"), -1)
        logits = logits * (1.0 - p_mask) + NEG_INF * p_mask
        return ops.log_softmax(logits, axis=-1)

    def call(self, inputs, training=None):
        if "p_mask" not in inputs:
            raise ValueError(
                "AlbertSquadV2 inputs need 'p_mask' [batch, length] (1 where an answer cannot "
                "start: the question, [SEP]s and padding; 0 for the paragraph and [CLS])"
            )
        seq = ops.cast(self.albert(inputs, training=training)["sequence_output"], "float32")
        p_mask = ops.cast(inputs["p_mask"], "float32")
        start_logits = ops.squeeze(ops.cast(self.start_dense(seq), "float32"), -1)
        start_logits = start_logits * (1.0 - p_mask) + NEG_INF * p_mask
        start_log_probs = ops.log_softmax(start_logits, axis=-1)
        out = {"start_log_probs": start_log_probs}
        t = ops.shape(seq)[1]
        if "start_positions" in inputs:  # gold-start conditioning (training and eval loss)
            gold = ops.reshape(ops.cast(inputs["start_positions"], "int32"), (-1, 1, 1))
            feat = ops.take_along_axis(
                seq, ops.broadcast_to(gold, (ops.shape(seq)[0], 1, seq.shape[-1])), 1
            )
            feat = ops.broadcast_to(feat, ops.shape(seq))
            out["end_log_probs"] = self._end_log_probs(seq, feat, p_mask)
        if not training:  # beam over the top starts
            k = self.start_n_top
            start_top_log_probs, start_top_index = ops.top_k(start_log_probs, k)
            feats = ops.take_along_axis(
                seq[:, None], start_top_index[:, :, None, None], axis=2
            )  # [B,K,1,H]
            feats = ops.broadcast_to(feats, (ops.shape(seq)[0], k, t, seq.shape[-1]))
            seq_k = ops.broadcast_to(seq[:, None], (ops.shape(seq)[0], k, t, seq.shape[-1]))
            end_log_probs = self._end_log_probs(seq_k, feats, p_mask[:, None, :])  # [B,K,T]
            end_top_log_probs, end_top_index = ops.top_k(end_log_probs, self.end_n_top)
            b = ops.shape(seq)[0]
            out.update(
                start_top_log_probs=start_top_log_probs,
                start_top_index=start_top_index,
                end_top_log_probs=ops.reshape(end_top_log_probs, (b, k * self.end_n_top)),
                end_top_index=ops.reshape(end_top_index, (b, k * self.end_n_top)),
            )
        start_p = ops.softmax(start_logits, axis=-1)
        start_feature = ops.einsum("bth,bt->bh", seq, start_p)
        cls_feature = seq[:, 0]
        x = self.answer_dense_0(ops.concatenate([start_feature, cls_feature], axis=-1))
        x = self.answer_dropout(x, training=training)
        out["cls_logits"] = ops.squeeze(ops.cast(self.answer_dense_1(x), "float32"), -1)
        return self._passthrough(inputs, out)

    def _example_losses(self, features, outputs):
        start = _positions_nll(outputs["start_log_probs"], features["start_positions"])
        end = _positions_nll(outputs["end_log_probs"], features["end_positions"])
        target = ops.reshape(ops.cast(features["is_impossible"], "float32"), (-1,))
        z = outputs["cls_logits"]
        cls = ops.maximum(z, 0) - z * target + ops.log1p(ops.exp(-ops.abs(z)))  # sigmoid CE
        return 0.5 * (start + end), cls

    def task_loss(self, features, labels, outputs):
        span, cls = self._example_losses(features, outputs)
        return _mean(0.5 * span + 0.5 * cls)

    def update_task_metrics(self, features, labels, outputs):
        span, cls = self._example_losses(features, outputs)
        self.loss_metric.update_state(span)
        self.cls_loss_metric.update_state(cls)

    def original_head_variables(self):
        def d(prefix, layer, bias=True):
            names = {f"{prefix}/kernel": layer.kernel}
            if bias:
                names[f"{prefix}/bias"] = layer.bias
            return names

        return {
            **d("start_logits/dense", self.start_dense),
            **d("end_logits/dense_0", self.end_dense_0),
            "end_logits/LayerNorm/gamma": self.end_layer_norm.gamma,
            "end_logits/LayerNorm/beta": self.end_layer_norm.beta,
            **d("end_logits/dense_1", self.end_dense_1),
            **d("answer_class/dense_0", self.answer_dense_0),
            **d("answer_class/dense_1", self.answer_dense_1, bias=False),
        }
