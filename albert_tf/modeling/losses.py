"""ALBERT's pretraining objectives: weighted masked-LM cross-entropy and sentence-order CE.

Losses are returned as this replica's share of the global loss (see replica_mean):
on one device that is the loss itself; over N replicas the shares sum to the loss of the
global batch, which is what the summed gradients need.
"""

import keras
from keras import ops
import tensorflow as tf


def replica_mean(numerator, denominator, epsilon=0.0):
    """This replica's share of a global ratio Σnum / Σden: num / all-reduced den.

    Summed over replicas (as the optimizer sums gradients) it gives the exact global value, so a
    loss over N replicas equals the loss of one device at the same global batch. Under
    tf.distribute each replica sees its own part of the batch, so the denominator is summed over
    the replicas; on JAX (`keras.distribution`) the step is one program over the global batch,
    sharded by XLA, so the sums already are global and the ratio is the loss itself."""
    if keras.backend.backend() == "tensorflow":
        ctx = tf.distribute.get_replica_context()
        if ctx is not None and ctx.num_replicas_in_sync > 1:
            denominator = ctx.all_reduce(tf.distribute.ReduceOp.SUM, denominator)
    return numerator / (denominator + epsilon)


MLM_WEIGHT_EPSILON = 1e-5  # Google's denominator: Σw·CE / (Σw + 1e-5)


def masked_lm_example_loss(mlm_logits, masked_lm_ids):
    """Per-prediction negative log-likelihood [B,P] in float32."""
    log_probs = ops.log_softmax(ops.cast(mlm_logits, "float32"), axis=-1)
    ids = ops.cast(masked_lm_ids, "int32")
    return -ops.squeeze(ops.take_along_axis(log_probs, ids[..., None], axis=-1), -1)


def masked_lm_loss(mlm_logits, masked_lm_ids, masked_lm_weights):
    """Σ w·CE / (Σ w + 1e-5) over the [B,P] predictions; padded slots carry weight 0."""
    weights = ops.cast(masked_lm_weights, "float32")
    nll = masked_lm_example_loss(mlm_logits, masked_lm_ids)
    return replica_mean(ops.sum(weights * nll), ops.sum(weights), MLM_WEIGHT_EPSILON)


def sentence_order_example_loss(sop_logits, labels):
    """Per-example negative log-likelihood [B] of the 2-way SOP logits, in float32."""
    log_probs = ops.log_softmax(ops.cast(sop_logits, "float32"), axis=-1)
    labels = ops.reshape(ops.cast(labels, "int32"), (-1, 1))
    return -ops.squeeze(ops.take_along_axis(log_probs, labels, axis=-1), -1)


def sentence_order_loss(sop_logits, labels):
    """Mean cross-entropy of the 2-way SOP logits (label 0 = in order, 1 = swapped)."""
    nll = sentence_order_example_loss(sop_logits, labels)
    return replica_mean(ops.sum(nll), ops.cast(ops.shape(nll)[0], "float32"))


def pretraining_loss(outputs, features):
    """Total loss = MLM + SOP, with both parts, from model outputs and Google's feature names."""
    mlm = masked_lm_loss(
        outputs["mlm_logits"], features["masked_lm_ids"], features["masked_lm_weights"]
    )
    sop = sentence_order_loss(outputs["sop_logits"], features["next_sentence_labels"])
    return mlm + sop, mlm, sop
