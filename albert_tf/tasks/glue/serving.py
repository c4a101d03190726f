"""SavedModel export whose serving signature takes raw text: tokenized in the graph
(GraphTokenizer), packed, classified. Loadable with plain `tf.saved_model.load`."""
from __future__ import annotations

import os
import shutil

import tensorflow as tf


class TextClassifierModule(tf.Module):
    """strings → probabilities / predictions (label ids) / labels (names); one or two texts."""

    def __init__(self, model, tokenizer, max_seq_length, label_names, is_regression, pair):
        super().__init__(name="albert_text_classifier")
        self.model, self.tokenizer = model, tokenizer
        self.max_seq_length, self.is_regression, self.pair = max_seq_length, is_regression, pair
        self.label_names = tf.constant(list(label_names) or [""])
        spec = tf.TensorSpec([None], tf.string)
        signature = [spec, spec] if pair else [spec]
        self.serve = tf.function(self._serve, input_signature=signature)

    def _serve(self, text_a, text_b=None):
        features = self.tokenizer.encode(text_a, text_b, self.max_seq_length)
        outputs = self.model(features, training=False)
        if self.is_regression:
            return {"predictions": outputs["predictions"]}
        ids = tf.argmax(outputs["probabilities"], axis=-1, output_type=tf.int32)
        return {"probabilities": outputs["probabilities"], "predictions": ids,
                "labels": tf.gather(self.label_names, ids)}


def export_text_classifier(model, task, export_dir) -> str:
    """Export a GLUE classifier with a raw-text `serving_default` signature (text_a[, text_b]).

    Written to a temporary folder beside export_dir and renamed into place when complete."""
    from albert_tf.text.graph_tokenizer import GraphTokenizer
    encoder = task.encoder
    if not encoder.spm_model_file:
        raise ValueError("--export_dir needs --spm_model_file: the in-graph tokenizer is SentencePiece")
    tokenizer = GraphTokenizer(encoder.spm_model_file, do_lower_case=encoder.do_lower_case)
    pair = task.processor.has_text_b()
    module = TextClassifierModule(model, tokenizer, task.max_seq_length,
                                  task.processor.get_labels(), task.is_regression, pair)
    export_dir = os.path.abspath(os.fspath(export_dir))
    tmp = f"{export_dir}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tf.saved_model.save(module, tmp, signatures={"serving_default": module.serve.get_concrete_function()})
        if os.path.exists(export_dir):
            shutil.rmtree(export_dir)
        os.replace(tmp, export_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return export_dir
