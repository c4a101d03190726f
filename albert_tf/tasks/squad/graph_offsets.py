"""In-graph twin of `alignment.tokenize_paragraph`: a paragraph's piece ids and each piece's
[start, end) in the ORIGINAL string's characters, for the SQuAD SavedModel.

The alignment ignores spaces, as the Python one does: every original character becomes what
preprocess_text makes of it (NFKD, no combining marks, lower; whitespace becomes nothing), and
piece t covers the next c_t of those non-space characters, c_t being the piece's length
without "▁" (a run of unknown characters for the unknown piece). Where the two texts agree
(the Python path's `exact` alignment) this is the Python map; where SentencePiece's own
normaliser changed characters the Python path falls back to difflib, which has no in-graph
twin (docs/squad.md). Everything works on flat values with row offsets, so a batch of
paragraphs is one set of ops.
"""

from __future__ import annotations

import sentencepiece as spm
import tensorflow as tf

from albert_tf.text import codepoints
from albert_tf.text.spm_encode import SPIECE_UNDERLINE


def _ws_class() -> str:
    """RE2 class of Python's str.isspace characters."""
    return codepoints.ranges_to_class(codepoints.whitespace_codepoints())


def _rows(ragged):
    """(row index of each flat value, row starts, row lengths), int64."""
    return ragged.value_rowids(), ragged.row_starts(), ragged.row_lengths()


def _row_cumsum_exclusive(values, rowids, row_starts):
    """Exclusive cumulative sum of flat int64 values within their rows."""
    total = tf.cumsum(values, exclusive=True)
    base = tf.gather(tf.concat([total, [0]], 0), row_starts)
    return total - tf.gather(base, rowids)


def _next_at_or_after(keys_real, vals_real, sentinel_keys, sentinel_vals, queries, side):
    """For each query, the value at the first real key ≥ query ('left') or the last ≤ query
    ('right'), the row's sentinel when none: keys are sorted within one int64 line."""
    keys = tf.concat([keys_real, sentinel_keys], 0)
    vals = tf.concat([vals_real, sentinel_vals], 0)
    order = tf.argsort(keys, stable=True)
    keys, vals = tf.gather(keys, order), tf.gather(vals, order)
    idx = tf.searchsorted(keys, queries, side=side, out_type=tf.int64)
    if side == "right":
        idx = idx - 1
    return tf.gather(vals, tf.clip_by_value(idx, 0, tf.size(vals, tf.int64) - 1))


class PieceOffsets(tf.Module):
    """paragraph strings [B] → (ids, starts, ends), ragged [B, (pieces)]: the tokenizer's ids
    and each piece's [start, end) in characters (code points) of the string."""

    def __init__(self, tokenizer, name=None):
        super().__init__(name=name)

        self.tokenizer = tokenizer
        sp = spm.SentencePieceProcessor(model_proto=tokenizer.model_proto)
        pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
        self.unk_id = sp.unk_id()
        text = [p.replace(SPIECE_UNDERLINE, "") for p in pieces]
        self._counts = tf.constant([len(t) for t in text], tf.int64)
        # characters some piece holds; SentencePiece makes a run of any others one unknown piece
        known = sorted(
            {c for i, t in enumerate(text) if not (sp.is_control(i) or sp.is_unknown(i)) for c in t}
            or {" "}
        )
        self._known = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(known), tf.ones([len(known)], tf.int64)
            ),
            0,
        )

    def __call__(self, strings):
        strings = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="ignore")
        ids = self.tokenizer.tokenize(strings)
        starts, ends = self._offsets(strings, ids)
        return ids, ids.with_flat_values(starts), ids.with_flat_values(ends)

    def _offsets(self, strings, ids):
        """The character stream, the SentencePiece pieces' counts over it, their spans."""
        stream = char_stream(self.tokenizer, strings)
        return piece_spans(ids, self._counts_of(ids, stream), stream)

    def _counts_of(self, ids, stream):
        """Non-space characters per piece: its text's length without "▁", and for the k-th
        unknown piece of a row the length of that row's k-th run of unknown characters (a
        run of characters no piece holds, which SentencePiece makes one unknown piece)."""
        owner, p_row, pre_chars = stream["owner"], stream["p_row"], stream["pre_chars"]
        prev_owner = tf.concat([[-1], owner[:-1]], 0)
        within = tf.concat([[False], tf.equal(p_row[1:], p_row[:-1])], 0)
        # spaces before: whitespace characters, or a character NFKD turns into a space
        space_src = stream["is_ws"] | tf.strings.regex_full_match(stream["done"], "(?s).* .*")
        before = tf.concat([[0], tf.cumsum(tf.cast(space_src, tf.int64))], 0)  # count below x
        space_before = tf.gather(before, owner) - tf.gather(before, prev_owner + 1) > 0
        unknown = tf.equal(self._known.lookup(pre_chars), 0)
        prev_unknown = tf.concat([[False], unknown[:-1]], 0)
        run_start = unknown & ~(within & prev_unknown & ~space_before)
        run_id = tf.cumsum(tf.cast(run_start, tf.int64)) - 1
        run_len = tf.math.unsorted_segment_sum(
            tf.cast(unknown, tf.int64),
            tf.maximum(run_id, 0),
            tf.maximum(tf.reduce_max(run_id) + 1, 1),
        )
        run_row = tf.boolean_mask(p_row, run_start)
        t_row, t_start, _ = _rows(ids)
        flat = tf.cast(ids.flat_values, tf.int64)
        is_unk = tf.equal(flat, self.unk_id)
        # the k-th unknown piece of a row takes the k-th unknown run of that row
        n_rows = tf.shape(t_start, out_type=tf.int64)[0]
        runs_before = tf.cumsum(
            tf.math.bincount(run_row, minlength=n_rows, dtype=tf.int64), exclusive=True
        )
        unk_k = _row_cumsum_exclusive(tf.cast(is_unk, tf.int64), t_row, t_start)
        run_idx = tf.clip_by_value(
            tf.gather(runs_before, t_row) + unk_k, 0, tf.maximum(tf.size(run_len, tf.int64) - 1, 0)
        )
        unk_len = tf.gather(tf.concat([run_len, [1]], 0), run_idx)
        return tf.where(is_unk, unk_len, tf.gather(self._counts, flat))


class WordPieceOffsets(tf.Module):
    """PieceOffsets for a GraphWordPieceTokenizer (the Chinese releases): every piece covers
    as many of BERT's normalised non-space characters as it has characters without "##"; an
    unknown word is one piece over all of its characters."""

    def __init__(self, tokenizer, name=None):
        super().__init__(name=name)
        self.tokenizer = tokenizer

    def __call__(self, strings):
        strings = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="ignore")
        ids, counts = self.tokenizer.tokenize_with_counts(strings)
        starts, ends = piece_spans(ids, counts.flat_values, char_stream(self.tokenizer, strings))
        return ids, ids.with_flat_values(starts), ids.with_flat_values(ends)


def offsets_for(tokenizer):
    """The offsets module of an in-graph tokenizer (SentencePiece or WordPiece)."""
    if hasattr(tokenizer, "tokenize_with_counts"):
        return WordPieceOffsets(tokenizer)
    return PieceOffsets(tokenizer)


def char_stream(tokenizer, strings) -> dict:
    """Original characters → the non-space characters the tokenizer's per-character
    normalisation makes of them, each with its owner (flat original character index), the
    row of each, and each original character's end extended over the characters after it
    that normalisation drops (combining marks)."""
    chars = tf.strings.unicode_split(strings, "UTF-8")  # [B, (n)]
    c_row, c_start, n_chars = _rows(chars)
    is_ws = tf.strings.regex_full_match(chars.flat_values, _ws_class())
    done = tf.where(is_ws, tf.fill(tf.shape(is_ws), ""), tokenizer.normalize(chars.flat_values))
    # a character normalisation drops (combining mark) belongs to the one before it
    stopper = tf.logical_or(is_ws, tf.strings.length(done) > 0)
    flat_pos = tf.range(tf.size(is_ws, tf.int64))
    sentinels = c_start + n_chars
    stops = tf.sort(tf.concat([tf.boolean_mask(flat_pos, stopper), sentinels], 0))
    next_stop = tf.searchsorted(stops, flat_pos, side="right", out_type=tf.int64)
    char_end = tf.gather(stops, next_stop) - tf.gather(c_start, c_row)  # exclusive, in row
    pre = tf.strings.unicode_split(done, "UTF-8")  # [chars, (pre)]
    keep = tf.not_equal(pre.flat_values, " ")
    owner = tf.boolean_mask(tf.gather(flat_pos, pre.value_rowids()), keep)  # flat char index
    return {
        "owner": owner,
        "p_row": tf.gather(c_row, owner),
        "char_end": char_end,
        "c_start": c_start,
        "n_chars": n_chars,
        "is_ws": is_ws,
        "done": done,
        "pre_chars": tf.boolean_mask(pre.flat_values, keep),
    }


def piece_spans(ids, counts, stream):
    """Original [start, end) of every piece, from its count of non-space characters."""
    owner, p_row, char_end = stream["owner"], stream["p_row"], stream["char_end"]
    c_start, n_chars = stream["c_start"], stream["n_chars"]
    t_row, t_start, _ = _rows(ids)
    n_rows = tf.shape(t_start, out_type=tf.int64)[0]
    lo = _row_cumsum_exclusive(counts, t_row, t_start)
    # kept characters of each row start at p_first[row]
    p_first = tf.math.unsorted_segment_min(tf.range(tf.size(p_row, tf.int64)), p_row, n_rows)
    last = tf.maximum(tf.size(owner, tf.int64) - 1, 0)
    owner_pad = tf.concat([owner, [0]], 0)
    lo_g = tf.clip_by_value(tf.gather(p_first, t_row) + lo, 0, last)
    hi_g = tf.clip_by_value(tf.gather(p_first, t_row) + lo + counts - 1, 0, last)
    row_base = tf.gather(c_start, t_row)
    real_start = tf.gather(owner_pad, lo_g) - row_base
    real_end = tf.gather(tf.concat([char_end, [0]], 0), tf.gather(owner_pad, hi_g))
    real = counts > 0
    # a piece covering no character starts where the next real piece starts, ends where the
    # last one ended
    pos = tf.range(tf.size(counts, tf.int64))
    keys = 2 * tf.boolean_mask(pos, real)
    starts = _next_at_or_after(
        keys,
        tf.boolean_mask(real_start, real),
        2 * (t_start + ids.row_lengths()) - 1,
        tf.gather(n_chars, tf.range(n_rows)),
        2 * pos,
        "left",
    )
    ends = _next_at_or_after(
        keys,
        tf.boolean_mask(real_end, real),
        2 * t_start - 1,
        tf.zeros_like(t_start),
        2 * pos,
        "right",
    )
    return tf.cast(starts, tf.int32), tf.cast(ends, tf.int32)
