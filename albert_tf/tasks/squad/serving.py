"""The SQuAD SavedModel export, whose serving signature answers raw-text questions.

It takes raw strings (question, context) and gives the answer: the Python path (features.py's
windows, the model, postprocess.py's top answer) as one graph. Each context is tokenized with
piece-to-character offsets (graph_offsets.PieceOffsets, or WordPieceOffsets) and cut into
Google's doc-stride windows; every window is scored, and the best valid span over all windows
is picked with postprocess.py's rules: top-n starts x top-n ends (v1.1) or the start/end beam
(v2.0), paragraph positions only, a start in its max-context window, end >= start, at most
max_answer_length pieces, a non-empty text, ties to the earlier candidate.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from albert_tf.tasks import serving
from albert_tf.tasks.squad.graph_offsets import offsets_for

NO_ANSWER_V1 = "empty"  # the Python path's text when no span is valid (Google's)
NO_ANSWER_SCORE_V2 = -2e6  # its v2 entry: start and end log-probs of -1e6


def window_spans(n, qlen, max_seq_length, doc_stride):
    """Cuts each context into Google's doc-stride windows, in the graph.

    As `features.doc_spans` does in Python, for a batch: a window holds at most
    `max_seq_length - 3 - qlen` pieces and the next starts `doc_stride` pieces later (or
    sooner, when a window is shorter than the stride). The windows are listed flat, example
    by example.

    Args:
        n: tf.Tensor. [examples] int64, the number of context pieces of each example.
        qlen: tf.Tensor. [examples] int64, the number of question pieces of each example.
        max_seq_length: int. The length of each window's features.
        doc_stride: int. The distance between window starts, in pieces.

    Returns:
        tuple. `(example, start, length, count)`: per window, the example it belongs to,
        its first context piece and its piece count ([windows] int64 each); and per
        example, its number of windows ([examples] int64; 0 for an empty context).

    Example:

    >>> import tensorflow as tf
    >>> from albert_tf.tasks.squad.serving import window_spans
    >>> example, start, length, count = window_spans(
    ...     tf.constant([10, 0], tf.int64), tf.constant([3, 2], tf.int64), 12, 4)
    >>> start.numpy().tolist(), length.numpy().tolist(), count.numpy().tolist()
    ([0, 4], [6, 6], [2, 0])
    """
    room = tf.cast(max_seq_length - 3, tf.int64) - qlen
    step = tf.minimum(room, doc_stride)
    extra = tf.maximum(n - room, 0)
    count = tf.where(n > 0, 1 + (extra + step - 1) // step, 0)
    windows = tf.ragged.range(count)
    ex = windows.value_rowids()
    start = windows.flat_values * tf.gather(step, ex)
    length = tf.minimum(tf.gather(n, ex) - start, tf.gather(room, ex))
    return ex, start, length, count


def max_context(ex, start, length, count, max_seq_length):
    """Marks, for each window, the context pieces whose best window it is.

    As `features.is_max_context` does in Python: a piece's best window is the one where
    min(pieces to its left, pieces to its right) + 0.01 * window length is highest, the
    first such window on ties. Answers may only start at such pieces.

    Args:
        ex: tf.Tensor. [windows] int64, the example of each window.
        start: tf.Tensor. [windows] int64, each window's first context piece.
        length: tf.Tensor. [windows] int64, each window's piece count.
        count: tf.Tensor. [examples] int64, the number of windows of each example.
        max_seq_length: int. The width L of the result.

    Returns:
        tf.Tensor. [windows, L] bool: whether the k-th context piece of window w has its max
        context there (only the first `length[w]` columns are meaningful).

    Example:

    >>> import tensorflow as tf
    >>> from albert_tf.tasks.squad.serving import max_context, window_spans
    >>> ex, start, length, count = window_spans(
    ...     tf.constant([10], tf.int64), tf.constant([3], tf.int64), 12, 4)
    >>> max_context(ex, start, length, count, 12)[:, :6].numpy().astype(int).tolist()
    [[1, 1, 1, 1, 1, 0], [0, 1, 1, 1, 1, 1]]
    """
    n_windows = tf.size(start, tf.int64)
    first = tf.cumsum(count, exclusive=True)  # each example's first window
    most = tf.reduce_max(tf.concat([count, [1]], 0))
    j = tf.range(most)[None, :]  # the example's windows, [1, J]
    valid = j < tf.gather(count, ex)[:, None]
    cand = tf.minimum(tf.gather(first, ex)[:, None] + j, tf.maximum(n_windows - 1, 0))
    c_start = tf.where(valid, tf.gather(start, cand), 0)[:, None, :]
    c_len = tf.where(valid, tf.gather(length, cand), 0)[:, None, :]
    t = (start[:, None] + tf.range(max_seq_length, dtype=tf.int64)[None, :])[:, :, None]
    c_end = c_start + c_len - 1
    inside = (t >= c_start) & (t <= c_end) & valid[:, None, :]
    score = tf.cast(tf.minimum(t - c_start, c_end - t), tf.float64) + 0.01 * tf.cast(
        c_len, tf.float64
    )
    score = tf.where(inside, score, -1e300)
    best = tf.reduce_max(score, axis=-1, keepdims=True)
    ties = tf.where(score == best, tf.broadcast_to(j[:, None, :], tf.shape(score)), most)
    own = tf.range(n_windows) - tf.gather(first, ex)
    return tf.equal(tf.reduce_min(ties, axis=-1), own[:, None])


def _one_per_row(value, rows):
    """A ragged [rows, 1] of value."""
    return tf.RaggedTensor.from_row_lengths(tf.fill([rows], value), tf.ones([rows], tf.int64))


def window_features(tokenizer, q_ids, p_ids, ex, start, length, max_seq_length):
    """Packs each window as `[CLS] question [SEP] window [SEP]`, in the graph.

    As `features._window_feature` does in Python, padded to `max_seq_length`.

    Args:
        tokenizer: GraphTokenizer. Gives `cls_id`, `sep_id` and `pad_id`.
        q_ids: tf.RaggedTensor. [examples, (pieces)] the question ids.
        p_ids: tf.RaggedTensor. [examples, (pieces)] the context ids.
        ex: tf.Tensor. [windows] int64, the example of each window.
        start: tf.Tensor. [windows] int64, each window's first context piece.
        length: tf.Tensor. [windows] int64, each window's piece count.
        max_seq_length: int. The length of the features.

    Returns:
        dict. [windows, max_seq_length] int32 `input_ids`, `input_mask`, `segment_ids` and
        `p_mask` (0 for [CLS] and the context pieces, 1 elsewhere).
    """
    rows = tf.size(ex)
    q = tf.gather(q_ids, ex)
    begin = tf.gather(p_ids.row_starts(), ex) + start
    idx = tf.ragged.range(begin, begin + length)
    doc = tf.RaggedTensor.from_row_splits(
        tf.gather(p_ids.flat_values, idx.flat_values), idx.row_splits, validate=False
    )
    cls, sep = _one_per_row(tokenizer.cls_id, rows), _one_per_row(tokenizer.sep_id, rows)
    ids = tf.concat([cls, q, sep, doc, sep], axis=1)
    ids = ids.to_tensor(default_value=tokenizer.pad_id, shape=[None, max_seq_length])
    pos = tf.range(max_seq_length, dtype=tf.int64)[None, :]
    off = (q.row_lengths() + 2)[:, None]
    end = off + length[:, None]
    in_doc = (pos >= off) & (pos < end)
    as_int = lambda x: tf.cast(x, tf.int32)
    return {
        "input_ids": as_int(ids),
        "input_mask": as_int(pos < end + 1),
        "segment_ids": as_int((pos >= off) & (pos < end + 1)),
        "p_mask": as_int(~((pos == 0) | in_doc)),
    }


def candidates(outputs, v2, n_best_size, end_n_top):
    """Lists the candidate answer spans of each window, in the graph.

    v1.1: every pair of the `n_best_size` best start and end logits. v2.0: the model's
    beam, each of its top starts with its `end_n_top` top ends. The candidates come in the
    order the Python path proposes them (start rank, then end rank).

    Args:
        outputs: dict. The model's outputs: `start_logits`, `end_logits` (v1.1), or
            `start_top_log_probs`, `start_top_index`, `end_top_log_probs`, `end_top_index`
            (v2.0).
        v2: bool. SQuAD v2.0.
        n_best_size: int. The starts and ends considered per window (v1.1).
        end_n_top: int. The ends per start of v2.0's beam.

    Returns:
        tuple. `(score, start, end)`, each [windows, candidates]: the start score plus the
        end score (float64), and the start and end positions in the window's features.
    """
    if v2:
        k = tf.shape(outputs["start_top_index"])[1]
        s_lp = tf.repeat(tf.cast(outputs["start_top_log_probs"], tf.float64), end_n_top, axis=1)
        s_ix = tf.repeat(outputs["start_top_index"], end_n_top, axis=1)
        e_lp = tf.cast(outputs["end_top_log_probs"], tf.float64)[:, : k * end_n_top]
        return s_lp + e_lp, s_ix, outputs["end_top_index"][:, : k * end_n_top]
    length = outputs["start_logits"].shape[1]
    k = min(n_best_size, length) if length else n_best_size
    s_val, s_ix = tf.math.top_k(outputs["start_logits"], k)  # ties: lower index first
    e_val, e_ix = tf.math.top_k(outputs["end_logits"], k)
    score = tf.cast(s_val, tf.float64)[:, :, None] + tf.cast(e_val, tf.float64)[:, None, :]
    flat = lambda x: tf.reshape(x, [tf.shape(x)[0], -1])
    s_ix = tf.broadcast_to(s_ix[:, :, None], tf.shape(score))
    e_ix = tf.broadcast_to(e_ix[:, None, :], tf.shape(score))
    return flat(score), flat(s_ix), flat(e_ix)


class Candidates(NamedTuple):
    """Candidate spans per window [windows, candidates]: start + end score, start and end
    positions in the window's features."""

    score: tf.Tensor
    start: tf.Tensor
    end: tf.Tensor


class Windows(NamedTuple):
    """The windows of a batch [windows]: the example each belongs to, its first paragraph piece,
    its piece count, the feature position of its first piece, and its max-context flags
    [windows, max_seq_length]."""

    example: tf.Tensor
    start: tf.Tensor
    length: tf.Tensor
    offset: tf.Tensor
    max_context: tf.Tensor


def best_spans(
    candidates: Candidates,
    windows: Windows,
    piece_starts,
    piece_ends,
    *,
    n_examples,
    max_answer_length,
):
    """Picks each example's best valid answer over all its windows, in the graph.

    A candidate is valid when its start and end are context pieces of the window, its
    start piece has its max context there, end >= start, it spans at most
    `max_answer_length` pieces and its text is not empty. Ties go to the earlier candidate,
    as the Python path's stable sort.

    Args:
        candidates: Candidates. The candidate spans of each window (`candidates`'s result).
        windows: Windows. Each window's example, first context piece, piece count, feature
            offset of its first context piece, and max-context flags.
        piece_starts: tf.RaggedTensor. [examples, (pieces)] int64, the first character of
            each context piece.
        piece_ends: tf.RaggedTensor. [examples, (pieces)] int64, the character after each
            context piece.
        n_examples: int or scalar tf.Tensor. The number of examples.
        max_answer_length: int. The longest answer, in pieces.

    Returns:
        tuple. `(found, score, start_char, end_char)`, each [examples]: whether a valid
        answer exists, its score (0.0 when none) and its character span in the context (0
        when none).
    """
    score, ex, start, length = candidates.score, windows.example, windows.start, windows.length
    off, maxctx, p_starts, p_ends = windows.offset, windows.max_context, piece_starts, piece_ends
    s_pos, e_pos = tf.cast(candidates.start, tf.int64), tf.cast(candidates.end, tf.int64)
    s_k, e_k = s_pos - off[:, None], e_pos - off[:, None]
    inside = lambda k: (k >= 0) & (k < length[:, None])
    ctx = tf.gather(
        maxctx, tf.clip_by_value(s_k, 0, tf.shape(maxctx, out_type=tf.int64)[1] - 1), batch_dims=1
    )
    valid = inside(s_k) & inside(e_k) & ctx & (e_pos >= s_pos) & (e_pos < s_pos + max_answer_length)
    base = (tf.gather(p_starts.row_starts(), ex) + start)[:, None]
    last = tf.maximum(tf.size(p_starts.flat_values, tf.int64) - 1, 0)
    pad = lambda x: tf.concat([x.flat_values, [0]], 0)
    s_char = tf.gather(pad(p_starts), tf.clip_by_value(base + s_k, 0, last))
    e_char = tf.gather(pad(p_ends), tf.clip_by_value(base + e_k, 0, last))
    valid &= e_char > s_char  # an empty text is skipped
    flat = lambda x: tf.reshape(x, [-1])
    c = tf.shape(score, out_type=tf.int64)[1]
    c_ex = tf.repeat(ex, c)
    masked = tf.where(flat(valid), flat(score), -float("inf"))
    best = tf.math.unsorted_segment_max(masked, c_ex, n_examples)
    order = tf.range(tf.size(masked, tf.int64))
    hit = flat(valid) & (masked == tf.gather(best, c_ex))
    big = tf.size(masked, tf.int64)
    chosen = tf.math.unsorted_segment_min(tf.where(hit, order, big), c_ex, n_examples)
    found = chosen < big
    chosen = tf.minimum(chosen, tf.maximum(big - 1, 0))
    pick = lambda x: tf.where(
        found, tf.gather(tf.concat([flat(x), tf.zeros([1], x.dtype)], 0), chosen), 0
    )
    return found, tf.where(found, best, 0.0), pick(s_char), pick(e_char)


class SquadModule(tf.Module):
    """A `tf.Module` that answers questions about raw-text contexts: what the export saves.

    Its `serve` function takes `question` [batch] and `context` [batch] strings and returns
    `answer_text` [batch] string, `start_char` and `end_char` [batch] int32 (code points into
    the context; -1 when no span is valid, the answer text then being "empty" for v1.1, as
    Google's, and "" for v2.0), `score` [batch] float (the answer's start + end score) and,
    for v2.0, `null_score` [batch] float (the lowest answer-class logit over the windows;
    above the threshold chosen on dev means no answer).

    Args:
        model: keras.Model. An `AlbertSquadV1` or `AlbertSquadV2`.
        tokenizer: GraphTokenizer. The in-graph tokenizer of the model's vocabulary.
        settings: SquadSettings. The window and post-processing settings.
    """

    def __init__(self, model, tokenizer, settings):
        super().__init__(name="albert_squad")
        self.model, self.tokenizer, self.s = model, tokenizer, settings
        self.offsets = offsets_for(tokenizer)
        spec = tf.TensorSpec([None], tf.string)
        self.serve = tf.function(self._serve, input_signature=[spec, spec])

    def _serve(self, question, context):
        s, v2 = self.s, self.s.version_2_with_negative
        context = tf.strings.unicode_transcode(context, "UTF-8", "UTF-8", errors="ignore")
        q_ids = self.tokenizer.tokenize(question)[:, : s.max_query_length]
        p_ids, p_starts, p_ends = self.offsets(context)
        qlen = q_ids.row_lengths()
        ex, start, length, count = window_spans(
            p_ids.row_lengths(), qlen, s.max_seq_length, s.doc_stride
        )
        features = window_features(
            self.tokenizer, q_ids, p_ids, ex, start, length, s.max_seq_length
        )
        outputs = self.model(features, training=False)
        maxctx = max_context(ex, start, length, count, s.max_seq_length)
        score, s_pos, e_pos = candidates(outputs, v2, s.n_best_size, s.end_n_top)
        n = tf.size(question, tf.int64)
        found, best, s_char, e_char = best_spans(
            Candidates(score, s_pos, e_pos),
            Windows(ex, start, length, tf.gather(qlen, ex) + 2, maxctx),
            p_starts,
            p_ends,
            n_examples=n,
            max_answer_length=s.max_answer_length,
        )
        none_text, none_score = ("", NO_ANSWER_SCORE_V2) if v2 else (NO_ANSWER_V1, 0.0)
        text = tf.strings.substr(
            context, tf.cast(s_char, tf.int32), tf.cast(e_char - s_char, tf.int32), unit="UTF8_CHAR"
        )
        out = {
            "answer_text": tf.where(found, text, none_text),
            "start_char": tf.cast(tf.where(found, s_char, -1), tf.int32),
            "end_char": tf.cast(tf.where(found, e_char, -1), tf.int32),
            "score": tf.cast(tf.where(found, best, none_score), tf.float32),
        }
        if v2:
            null = tf.math.unsorted_segment_min(tf.cast(outputs["cls_logits"], tf.float32), ex, n)
            out["null_score"] = tf.where(count > 0, null, 0.0)
        return out


def export_squad(model, task, export_dir, *, also=()) -> str:
    """Exports a SQuAD model as a SavedModel that answers raw-text questions.

    The `serving_default` signature takes `question` and `context`; see `SquadModule` for its
    outputs. A README.md beside the model says how to load and call it.

    Args:
        model: keras.Model. The trained `AlbertSquadV1` or `AlbertSquadV2`.
        task: SquadTask. The task: its tokenizer files and settings.
        export_dir: str. The export folder; the model goes into a new version folder
            `export_dir/<unix seconds>/`.
        also: Writers of the other export formats (LiteRT, ONNX) for the same version
            folder, see `serving.write_version`. Defaults to none.

    Returns:
        str. The version folder written.
    """
    tokenizer = serving.graph_tokenizer(task.spm_model_file, task.s.do_lower_case, task.vocab_file)
    module = SquadModule(model, tokenizer, task.s)
    outputs = (
        "`answer_text` [batch] string, `start_char`, `end_char` [batch] int32 (code "
        "points into the context; -1 without an answer), `score` [batch] float"
    )
    if task.s.version_2_with_negative:
        outputs += (
            ", `null_score` [batch] float (answer \"\" when it exceeds the "
            "null_score_diff_threshold chosen on dev)"
        )
    return serving.save_module(
        module,
        module.serve.get_concrete_function(),
        export_dir,
        "SQuAD " + ("v2.0" if task.s.version_2_with_negative else "v1.1"),
        "`question`, `context` [batch] strings",
        outputs,
        also=also,
    )
