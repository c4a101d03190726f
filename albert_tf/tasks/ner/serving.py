"""The NER SavedModel export, whose serving signature labels the words of raw text.

Raw text is split into words on whitespace and each word labelled in the graph: the in-graph
tokenizer on each word, the label of its first piece's logits, and "O" for the words past
max_seq_length, as the Python path labels them. Load the export with
`albert_tf.load_saved_model`.
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.tasks import serving


class TokenClassifierModule(tf.Module):
    """A `tf.Module` that labels the words of raw strings: what the NER export saves.

    Its `serve` function takes `text`, [batch] strings of words separated by whitespace,
    and returns `words` and `labels`, [batch, max words] strings ("" past each text's
    words), and `num_words`, [batch] int32.

    Args:
        model: keras.Model. The token classifier (`AlbertTokenClassifier`).
        tokenizer: GraphTokenizer. The in-graph tokenizer of the model's vocabulary.
        max_seq_length: int. The length the pieces are packed to; words that do not fit
            are labelled "O".
        labels: sequence of str. The label names in id order.
    """

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
    """Exports an NER model as a SavedModel that labels the words of raw text.

    The `serving_default` signature takes `text`; see `TokenClassifierModule` for its
    outputs. A README.md beside the model says how to load and call it.

    Args:
        model: keras.Model. The trained token classifier.
        task: NerTask. The task: its tokenizer, sequence length and labels.
        export_dir: str. The export folder; the model goes into a new version folder
            `export_dir/<unix seconds>/`.
        also: Writers of the other export formats (LiteRT, ONNX) for the same version
            folder, see `serving.write_version`. Defaults to none.

    Returns:
        str. The version folder written.
    """
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
