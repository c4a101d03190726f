"""RACE SavedModel export whose serving signature takes raw text (article, question, four
options), encoded in the graph exactly as `race.data.encode_race_example` encodes them."""

from __future__ import annotations

import tensorflow as tf

from albert_tf.tasks import serving
from albert_tf.tasks.race import data as race


def choice_texts_graph(question, options):
    """race_choice_text in-graph: question [N], options [N, C] → qa texts [N, C]: every "_" of
    the question replaced by the option, or question + " " + option when it has none."""
    c = tf.shape(options)[1]
    q = tf.repeat(question, c)
    opt = tf.reshape(options, [-1])
    parts = tf.strings.split(q, "_")  # ragged [N·C, (parts)]
    joined = tf.strings.reduce_join(parts + tf.expand_dims(opt, 1), axis=-1)
    keep = tf.strings.length(joined) - tf.strings.length(opt)
    filled = tf.strings.substr(joined, tf.zeros_like(keep), keep)
    has_blank = tf.strings.regex_full_match(q, "(?s).*_.*")
    out = tf.where(has_blank, filled, tf.strings.join([q, opt], separator=" "))
    return tf.reshape(out, tf.shape(options))


def _keep_last(ids, n):
    """The last min(n, len) ids of each row of a ragged [N, (len)] tensor."""
    lengths = ids.row_lengths()
    keep = tf.minimum(lengths, tf.cast(n, lengths.dtype))
    idx = tf.ragged.range(ids.row_limits() - keep, ids.row_limits())
    return tf.RaggedTensor.from_row_splits(
        tf.gather(ids.flat_values, idx.flat_values), idx.row_splits, validate=False
    )


class RaceModule(tf.Module):
    """article [B], question [B], options [B, 4] strings → probabilities [B, 4], prediction
    (int32 index) and letter ("A".."D")."""

    def __init__(self, model, tokenizer, max_seq_length, max_qa_length):
        super().__init__(name="albert_race")
        self.model, self.tokenizer = model, tokenizer
        self.max_seq_length, self.max_qa_length = max_seq_length, max_qa_length
        self.letters = tf.constant(list(race.ANSWER_LETTERS))
        s = tf.TensorSpec([None], tf.string)
        self.serve = tf.function(
            self._serve, input_signature=[s, s, tf.TensorSpec([None, race.NUM_CHOICES], tf.string)]
        )

    def _serve(self, article, question, options):
        c, budget = race.NUM_CHOICES, self.max_seq_length - 3
        article_ids = self.tokenizer.tokenize(article)
        qa_ids = self.tokenizer.tokenize(tf.reshape(choice_texts_graph(question, options), [-1]))
        qa_ids = _keep_last(qa_ids, min(self.max_qa_length, budget))  # as race.data._fit_choice
        a_ids = tf.gather(article_ids, tf.repeat(tf.range(tf.shape(article)[0]), c))
        a_ids = a_ids[:, :budget]
        keep_a = budget - tf.cast(qa_ids.row_lengths(), tf.int32)
        a_ids = tf.ragged.boolean_mask(
            a_ids, tf.ragged.range(a_ids.row_lengths()) < tf.cast(keep_a, tf.int64)[:, None]
        )
        features = self.tokenizer.pack(a_ids, qa_ids, self.max_seq_length)
        features = {k: tf.reshape(v, [-1, c * self.max_seq_length]) for k, v in features.items()}
        probs = self.model(features, training=False)["probabilities"]
        pred = tf.argmax(probs, axis=-1, output_type=tf.int32)
        return {"probabilities": probs, "prediction": pred, "letter": tf.gather(self.letters, pred)}


def export_race(model, task, export_dir, *, also=()) -> str:
    """Export a RACE model with a raw-text `serving_default` signature.

    `also`: the other formats' writers for the same version folder (serving.write_version)."""
    tokenizer = serving.encoder_tokenizer(task.encoder)
    module = RaceModule(model, tokenizer, task.max_seq_length, task.max_qa_length)
    return serving.save_module(
        module,
        module.serve.get_concrete_function(),
        export_dir,
        "RACE",
        "`article` [batch], `question` [batch], `options` [batch, 4] strings",
        "`probabilities` [batch, 4] float, `prediction` [batch] int32 index, `letter` "
        "[batch] \"A\"..\"D\"",
        also=also,
    )
