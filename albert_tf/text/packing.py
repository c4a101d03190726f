"""Sequence packing shared by every data builder: [CLS] A [SEP] (B [SEP]), in Python and in-graph.

Truncation is Google's: while the pair is too long, pop from the longer side (ties pop
from B). The in-graph version computes the same final lengths in closed form.
"""

from __future__ import annotations

__all__ = ["truncate_seq_pair", "truncated_lengths", "pack_ids", "pack_ids_graph"]


def truncate_seq_pair(tokens_a: list, tokens_b: list, max_num_tokens: int, rng=None) -> None:
    """Truncates the pair in place to at most max_num_tokens, popping from the longer list.

    Without rng pops from the back; with a random.Random, pops from the front when
    rng.random() < 0.5, else the back (one draw per pop, as Google's pretraining builder).
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if not trunc:
            raise ValueError(f"cannot truncate to max_num_tokens={max_num_tokens}")
        if rng is not None and rng.random() < 0.5:
            del trunc[0]
        else:
            trunc.pop()


def truncated_lengths(len_a: int, len_b: int, budget: int) -> tuple:
    """Lengths pop-from-longer truncation leaves, in closed form (ties trim B first)."""
    if len_a + len_b <= budget:
        return len_a, len_b
    new_a = min(len_a, max((budget + 1) // 2, budget - len_b))
    return new_a, budget - new_a


def _check_length(max_seq_length: int, pair: bool) -> int:
    """The token budget left after [CLS]/[SEP]s; ValueError when there is none."""
    budget = max_seq_length - (3 if pair else 2)
    if budget < 0:
        raise ValueError(
            f"max_seq_length={max_seq_length} is too small for "
            f"{'a pair' if pair else 'one segment'} with its special tokens"
        )
    return budget


def pack_ids(ids_a, ids_b, max_seq_length: int, cls_id: int, sep_id: int, pad_id: int = 0) -> dict:
    """[CLS] A [SEP] (B [SEP]) padded to max_seq_length: lists input_ids, input_mask, segment_ids.

    A pair is truncated to max_seq_length-3 tokens (one segment to max_seq_length-2) by
    popping from the longer side; the caller's lists are not changed.
    """
    pair = ids_b is not None
    budget = _check_length(max_seq_length, pair)
    a = list(ids_a)
    b = list(ids_b) if pair else []
    la, lb = truncated_lengths(len(a), len(b), budget)
    a, b = a[:la], b[:lb]
    ids = [cls_id] + a + [sep_id]
    segments = [0] * len(ids)
    if pair:
        ids += b + [sep_id]
        segments += [1] * (lb + 1)
    n = len(ids)
    pad = max_seq_length - n
    return {
        "input_ids": ids + [pad_id] * pad,
        "input_mask": [1] * n + [0] * pad,
        "segment_ids": segments + [0] * pad,
    }


def _graph_lengths(len_a, len_b, budget):
    """truncated_lengths on int tensors."""
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    over = len_a + len_b > budget
    cut_a = tf.minimum(len_a, tf.maximum((budget + 1) // 2, budget - len_b))
    new_a = tf.where(over, cut_a, len_a)
    new_b = tf.where(over, budget - cut_a, len_b)
    return new_a, new_b


def pack_ids_graph(
    ids_a, ids_b, max_seq_length: int, cls_id: int, sep_id: int, pad_id: int = 0
) -> dict:
    """pack_ids for a batch of ragged ids [batch, (len)]: int32 dense [batch, max_seq_length]
    tensors input_ids, input_mask, segment_ids, with the same truncation as pack_ids."""
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    pair = ids_b is not None
    budget = _check_length(max_seq_length, pair)
    ids_a = _as_ragged(ids_a)
    len_a = tf.cast(ids_a.row_lengths(), tf.int32)
    if pair:
        ids_b = _as_ragged(ids_b)
        len_b = tf.cast(ids_b.row_lengths(), tf.int32)
    else:
        len_b = tf.zeros_like(len_a)
    new_a, new_b = _graph_lengths(len_a, len_b, budget)
    batch = tf.shape(len_a, out_type=tf.int64)[0]
    cls = tf.RaggedTensor.from_row_lengths(tf.fill([batch], cls_id), tf.ones([batch], tf.int64))
    sep = tf.RaggedTensor.from_row_lengths(tf.fill([batch], sep_id), tf.ones([batch], tf.int64))
    a = _head(ids_a, new_a)
    parts = [cls, a, sep]
    seg_parts = [tf.zeros_like(cls), tf.zeros_like(a), tf.zeros_like(sep)]
    if pair:
        b = _head(ids_b, new_b)
        parts += [b, sep]
        seg_parts += [tf.ones_like(b), tf.ones_like(sep)]
    ids = tf.concat(parts, axis=1)
    segments = tf.concat(seg_parts, axis=1)
    shape = [None, max_seq_length]
    return {
        "input_ids": ids.to_tensor(default_value=pad_id, shape=shape),
        "input_mask": tf.ones_like(ids).to_tensor(default_value=0, shape=shape),
        "segment_ids": segments.to_tensor(default_value=0, shape=shape),
    }


def _as_ragged(ids):
    """int32 ragged [batch, (len)] with int64 row splits, from ragged or dense input."""
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    if not isinstance(ids, tf.RaggedTensor):
        ids = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(ids))
    if ids.ragged_rank != 1:
        raise ValueError(f"expected ids of shape [batch, (len)], got ragged rank {ids.ragged_rank}")
    return tf.cast(ids.with_row_splits_dtype(tf.int64), tf.int32)


def _head(rt, lengths):
    """The first lengths[i] values of each row of a ragged tensor."""
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    starts = rt.row_starts()
    lengths = tf.cast(lengths, starts.dtype)
    idx = tf.ragged.range(starts, starts + lengths)
    return tf.RaggedTensor.from_row_splits(
        tf.gather(rt.flat_values, idx.flat_values), idx.row_splits, validate=False
    )
