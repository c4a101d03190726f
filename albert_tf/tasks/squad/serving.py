"""SQuAD SavedModel export whose serving signature takes raw strings (question, context) and
gives the answer: the Python path (features.py windows, the model, postprocess.py's top
answer) as one graph. Each context is tokenized with piece → character offsets
(graph_offsets.PieceOffsets, or WordPieceOffsets), cut into Google's doc-stride windows, every
window is scored,
and the best valid span over all windows is picked with postprocess.py's rules: top-n starts
× top-n ends (v1) or the start/end beam (v2), paragraph positions only, max-context start,
end ≥ start, at most max_answer_length pieces, non-empty text, ties to the earlier candidate.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from albert_tf.tasks import serving
from albert_tf.tasks.squad.graph_offsets import offsets_for

NO_ANSWER_V1 = "empty"  # the Python path's text when no span is valid (Google's)
NO_ANSWER_SCORE_V2 = -2e6  # its v2 entry: start and end log-probs of -1e6


def window_spans(n, qlen, max_seq_length, doc_stride):
    """features.doc_spans for a batch: per example n pieces → (example, start, length) of each
    window, flat, in the Python order (examples, then windows)."""
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
    """[windows, L] bool: the k-th paragraph token of window w has its max context
    there (features.is_max_context: best min(left, right) + 0.01·length, first on ties)."""
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
    """features._window_feature in-graph: [CLS] question [SEP] window [SEP], padded; int32
    input_ids, input_mask, segment_ids and p_mask (0 for [CLS] and the paragraph)."""
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
    """(score float64, start position, end position), each [windows, C], in the order the
    Python path proposes them (start rank, then end rank)."""
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
    """Per example, the best valid non-empty candidate over its windows: (found, score,
    start_char, end_char). Ties go to the earlier candidate, as the Python path's stable sort.
    `piece_starts` / `piece_ends` are each paragraph piece's character span (ragged
    [examples, pieces])."""
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
    """question [B], context [B] strings → answer_text, start_char, end_char (code points into
    the context; -1 with no answer), score (start + end score of the answer), and null_score
    (v2: the minimum answer-class logit over the windows; above a threshold means no answer)."""

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
    """Export a SQuAD model with a raw-text `serving_default` signature (question, context).

    `also`: the other formats' writers for the same version folder (serving.write_version)."""
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
