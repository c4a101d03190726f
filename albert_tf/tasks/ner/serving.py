"""The NER SavedModel export: raw text → words → one label per word, in the graph (the in-graph
tokenizer on each word, the first piece's logits, the words past max_seq_length labelled "O"),
as the Python path labels them. Load it with `albert_tf.load_saved_model`."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.tasks import serving


class TokenClassifierModule(tf.Module):
    """text [batch] strings (words separated by whitespace) → `words`, `labels` [batch,
    max words] strings ("" past each text's words) and `num_words` [batch] int32."""

    def __init__(self, model, tokenizer, max_seq_length, labels):
        super().__init__(name="albert_token_classifier")
        self.model, self.tokenizer, self.max_seq_length = model, tokenizer, max_seq_length
        self.label_names = tf.constant(list(labels))
        self.serve = tf.function(self._serve, input_signature=[tf.TensorSpec([None], tf.string)])

    def _serve(self, text):
        words = tf.strings.split(text)  # [B, (words)]
        pieces = self.tokenizer.tokenize(words.flat_values)  # [W, (pieces)]
        n = pieces.row_lengths()
        start = words.row_starts()
        rows = words.value_rowids()
        total = tf.cumsum(n, exclusive=True)
        before = total - tf.gather(tf.concat([total, [0]], 0), tf.gather(start, rows))
        # a word fits if its last piece leaves room for [SEP]; past the first that does not,
        # none does (the counts only grow), and a word without pieces has no position
        fits = (before + n <= self.max_seq_length - 2) & (n > 0)
        kept = tf.ragged.boolean_mask(pieces, fits)  # the words that do not fit: no pieces
        ids = words.with_flat_values(kept).merge_dims(1, 2)
        features = self.tokenizer.pack(ids, None, self.max_seq_length)
        logits = self.model(features, training=False)["logits"]
        position = tf.where(fits, 1 + before, 0)
        best = tf.argmax(
            tf.gather_nd(logits, tf.stack([rows, position], 1)), -1, output_type=tf.int32
        )
        labels = tf.where(fits, tf.gather(self.label_names, best), "O")
        return {
            "words": words.to_tensor(""),
            "labels": words.with_flat_values(labels).to_tensor(""),
            "num_words": tf.cast(words.row_lengths(), tf.int32),
        }


def export_token_classifier(model, task, export_dir, *, also=()) -> str:
    """Export an NER model with a raw-text `serving_default` signature (text → word labels).

    `also`: the other formats' writers for the same version folder (serving.write_version)."""
    tokenizer = serving.encoder_tokenizer(task.encoder)
    module = TokenClassifierModule(model, tokenizer, task.max_seq_length, task.labels)
    return serving.save_module(
        module,
        module.serve.get_concrete_function(),
        export_dir,
        "NER (token classification)",
        "`text` [batch] strings, words separated by whitespace",
        "`words`, `labels` [batch, words] strings (\"\" past the text's "
        "words), `num_words` [batch] int32",
        also=also,
    )
