"""A text classifier's SavedModel export (GLUE's or your own data's), whose serving
signature takes raw text.

The text is tokenized in the graph (GraphTokenizer), packed and classified. Load the export
with `albert_tf.load_saved_model`.
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.tasks import serving


class TextClassifierModule(tf.Module):
    """A `tf.Module` that classifies raw strings: what the classifier export saves.

    Its `serve` function takes `text_a` (and `text_b` for sentence pairs), [batch] strings,
    and returns a dict:

    - classification: `probabilities` [batch, labels] float, `predictions` [batch] int32
      (the label id) and `labels` [batch] string (the label name);
    - multi-label: `probabilities` [batch, labels] (a sigmoid each) and `labels` [batch], the
      names of every label with probability >= `multi_label_threshold`, joined by
      `label_separator`;
    - regression: `predictions` [batch] float.

    Args:
        model: keras.Model. The classifier (`AlbertClassifier`).
        tokenizer: GraphTokenizer. The in-graph tokenizer of the model's vocabulary.
        max_seq_length: int. The length the texts are packed to.
        label_names: sequence of str. The label names in id order (empty for regression).
        is_regression: bool. The model predicts a number.
        pair: bool. The signature takes two texts (`text_a`, `text_b`).
        multi_label_threshold: float or None. For a multi-label classifier, the probability
            at which a label is predicted; None for a single-label one. Default None.
        label_separator: str. What joins a multi-label prediction's names. Default ",".
    """

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
    """Exports a text classifier as a SavedModel that takes raw text.

    The `serving_default` signature takes `text_a` (and `text_b` for a pair task), [batch]
    strings; see `TextClassifierModule` for its outputs. A multi-label task's threshold is
    chosen on the dev split (0.5 without one). A README.md beside the model says how to load
    and call it.

    Args:
        model: keras.Model. The trained classifier.
        task: ClassifierTask. The task (a GlueTask too): its tokenizer, sequence length,
            labels and pair setting.
        export_dir: str. The export folder; the model goes into a new version folder
            `export_dir/<unix seconds>/`.
        also: Writers of the other export formats (LiteRT, ONNX) for the same version
            folder, see `serving.write_version`. Defaults to none.

    Returns:
        str. The version folder written.
    """
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
