"""The RACE SavedModel export, whose serving signature takes raw text.

It takes the article, the question and its four options, and encodes them in the graph
exactly as `albert_tf.tasks.race.data.encode_race_example` encodes them. Load the export with
`albert_tf.load_saved_model`.
"""

from __future__ import annotations

import tensorflow as tf

from albert_tf.tasks import serving
from albert_tf.tasks.race import data as race


def choice_texts_graph(question, options):
    """Builds the text of each question-and-option pair in the graph.

    As `albert_tf.tasks.race.data.race_choice_text` does in Python: every "_" of the
    question is replaced by the option, or, when the question has none, the option follows
    the question after a space.

    Args:
        question: tf.Tensor. [N] strings.
        options: tf.Tensor. [N, C] strings, C options per question.

    Returns:
        tf.Tensor. [N, C] strings.

    Example:

    >>> import tensorflow as tf
    >>> from albert_tf.tasks.race.serving import choice_texts_graph
    >>> texts = choice_texts_graph(tf.constant(["The sky is _ .", "Why?"]),
    ...                            tf.constant([["blue", "red"], ["yes", "no"]]))
    >>> texts.numpy().tolist()
    [[b'The sky is blue .', b'The sky is red .'], [b'Why? yes', b'Why? no']]
    """
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
    """A `tf.Module` that answers RACE questions from raw strings: what the export saves.

    Its `serve` function takes `article` [batch], `question` [batch] and `options`
    [batch, 4] strings and returns `probabilities` [batch, 4] float, `prediction` [batch]
    int32 (the option's index) and `letter` [batch] string ("A" to "D").

    Args:
        model: keras.Model. The four-choice model (`AlbertMultipleChoice`).
        tokenizer: GraphTokenizer. The in-graph tokenizer of the model's vocabulary.
        max_seq_length: int. The length of each option's packed sequence.
        max_qa_length: int. The most pieces kept of the question-and-option text (its last
            ones).
    """

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
    """Exports a RACE model as a SavedModel that takes raw text.

    The `serving_default` signature takes `article`, `question` and `options`; see
    `RaceModule` for its outputs. A README.md beside the model says how to load and call it.

    Args:
        model: keras.Model. The trained four-choice model.
        task: RaceTask. The task: its tokenizer, sequence length and max_qa_length.
        export_dir: str. The export folder; the model goes into a new version folder
            `export_dir/<unix seconds>/`.
        also: Writers of the other export formats (LiteRT, ONNX) for the same version
            folder, see `serving.write_version`. Defaults to none.

    Returns:
        str. The version folder written.
    """
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
