"""ALBERT's pretraining objectives: weighted masked-LM cross-entropy and sentence-order CE."""
from keras import ops

MLM_WEIGHT_EPSILON = 1e-5  # Google's denominator: Σw·CE / (Σw + 1e-5)


def masked_lm_loss(mlm_logits, masked_lm_ids, masked_lm_weights):
    """Σ w·CE / (Σ w + 1e-5) over the [B,P] predictions; padded slots carry weight 0."""
    log_probs = ops.log_softmax(ops.cast(mlm_logits, "float32"), axis=-1)
    ids = ops.cast(masked_lm_ids, "int32")
    nll = -ops.squeeze(ops.take_along_axis(log_probs, ids[..., None], axis=-1), -1)
    weights = ops.cast(masked_lm_weights, "float32")
    return ops.sum(weights * nll) / (ops.sum(weights) + MLM_WEIGHT_EPSILON)


def sentence_order_loss(sop_logits, labels):
    """Mean cross-entropy of the 2-way SOP logits (label 0 = in order, 1 = swapped)."""
    log_probs = ops.log_softmax(ops.cast(sop_logits, "float32"), axis=-1)
    labels = ops.reshape(ops.cast(labels, "int32"), (-1, 1))
    return -ops.mean(ops.take_along_axis(log_probs, labels, axis=-1))


def masked_lm_accuracy_terms(mlm_logits, masked_lm_ids, masked_lm_weights):
    """(Σ w·correct, Σ w) so accuracy can be aggregated exactly across batches and replicas."""
    pred = ops.cast(ops.argmax(mlm_logits, axis=-1), "int32")
    weights = ops.cast(masked_lm_weights, "float32")
    correct = ops.cast(ops.equal(pred, ops.cast(masked_lm_ids, "int32")), "float32")
    return ops.sum(weights * correct), ops.sum(weights)


def pretraining_loss(outputs, features):
    """Total loss = MLM + SOP, with both parts, from model outputs and Google's feature names."""
    mlm = masked_lm_loss(outputs["mlm_logits"], features["masked_lm_ids"],
                         features["masked_lm_weights"])
    sop = sentence_order_loss(outputs["sop_logits"], features["next_sentence_labels"])
    return mlm + sop, mlm, sop
