"""SavedModel export whose serving signature takes raw text: tokenized in the graph
(GraphTokenizer), packed, classified. Load it with `albert_tf.load_saved_model`."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.tasks import serving


class TextClassifierModule(tf.Module):
    """strings → probabilities / predictions (label ids) / labels (names); one or two texts."""

    def __init__(
        self,
        model,
        tokenizer,
        max_seq_length,
        label_names,
        is_regression,
        pair,
        multi_label_threshold=None,
        label_separator=",",
    ):
        """`multi_label_threshold`: a multi-label classifier, whose `labels` are the names of
        every label with probability >= it, joined by `label_separator`."""
        super().__init__(name="albert_text_classifier")
        self.model, self.tokenizer = model, tokenizer
        self.max_seq_length, self.is_regression, self.pair = max_seq_length, is_regression, pair
        self.threshold, self.separator = multi_label_threshold, label_separator
        self.label_names = tf.constant(list(label_names) or [""])
        spec = tf.TensorSpec([None], tf.string)
        signature = [spec, spec] if pair else [spec]
        self.serve = tf.function(self._serve, input_signature=signature)

    def _serve(self, text_a, text_b=None):
        features = self.tokenizer.encode(text_a, text_b, self.max_seq_length)
        outputs = self.model(features, training=False)
        if self.is_regression:
            return {"predictions": outputs["predictions"]}
        if self.threshold is not None:
            chosen = outputs["probabilities"] >= self.threshold
            names = tf.ragged.boolean_mask(
                tf.broadcast_to(self.label_names, tf.shape(chosen)), chosen
            )
            return {
                "probabilities": outputs["probabilities"],
                "labels": tf.strings.reduce_join(names, axis=-1, separator=self.separator),
            }
        ids = tf.argmax(outputs["probabilities"], axis=-1, output_type=tf.int32)
        return {
            "probabilities": outputs["probabilities"],
            "predictions": ids,
            "labels": tf.gather(self.label_names, ids),
        }


def export_text_classifier(model, task, export_dir, *, also=()) -> str:
    """Export a GLUE classifier with a raw-text `serving_default` signature (text_a[, text_b]).

    `also`: the other formats' writers for the same version folder (serving.write_version)."""
    tokenizer = serving.encoder_tokenizer(task.encoder)
    pair = task.processor.has_text_b()
    threshold = task.export_threshold(model) if task.multi_label else None
    separator = getattr(task.processor, "label_separator", ",")
    module = TextClassifierModule(
        model,
        tokenizer,
        task.max_seq_length,
        task.processor.get_labels(),
        task.is_regression,
        pair,
        threshold,
        separator,
    )
    outputs = (
        "`predictions` [batch] float"
        if task.is_regression
        else "`probabilities` [batch, labels] float (a sigmoid each), `labels` [batch] the "
        f"labels with probability >= {threshold} (chosen on dev), joined by "
        f"{separator!r}"
        if task.multi_label
        else "`probabilities` [batch, labels] float, `predictions` [batch] int32 label index, "
        "`labels` [batch] label name"
    )
    return serving.save_module(
        module,
        module.serve.get_concrete_function(),
        export_dir,
        f"GLUE {task.task}",
        "`text_a`, `text_b` [batch] strings" if pair else "`text_a` [batch] strings",
        outputs,
        also=also,
    )
