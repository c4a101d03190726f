"""Length bucketing of fine-tuning batches: each batch is cut to the smallest of a fixed set of
sequence lengths that holds its longest record, so XLA compiles a handful of shapes.

Records are stored at max_seq_length; "bucketing" slices their per-token features (those whose
length is a multiple of seq_length: rows of seq_length tokens, 4 rows for RACE) to the bucket
length. Padding is masked everywhere in the model, so the real positions' outputs do not change.
Training order stays a pure function of (seed, position) (see `bucketed_batches`).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

SMALLEST_BUCKET = 16
WINDOW_BATCHES = 16  # training: batches sorted together per window (see bucketed_batches)


def bucket_lengths(max_seq_length: int, smallest: int = SMALLEST_BUCKET) -> tuple:
    """The sequence lengths that fine-tuning batches are cut to (the buckets).

    The buckets are `smallest` times 1, 2, 3, 4, 6, 8, 12, 16, ... (2^k and 3 * 2^k, so from the
    third bucket on each is at most 1.5x the one before) below `max_seq_length`, then
    `max_seq_length` itself: a batch is padded at most 1.5x beyond its longest record, with few
    distinct shapes (each shape is one compile under XLA). When `max_seq_length <= smallest`
    there is one bucket and nothing is cut. See `tpu_bucket_lengths` for the coarser set used
    on TPUs.

    Args:
        max_seq_length: int >= 1. The length the records are stored at; the last bucket.
        smallest: int >= 1. The first bucket. Default 16.

    Returns:
        tuple of int: the bucket lengths, increasing, ending with `max_seq_length`.

    Raises:
        ValueError: when `max_seq_length` or `smallest` is less than 1.

    Example:

    >>> import albert_tf
    >>> albert_tf.bucket_lengths(512)
    (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)
    >>> albert_tf.bucket_lengths(100)
    (16, 32, 48, 64, 96, 100)
    >>> albert_tf.bucket_lengths(12)
    (12,)
    """
    if max_seq_length < 1 or smallest < 1:
        raise ValueError(
            f"bucket_lengths: lengths must be positive, got {max_seq_length}, {smallest}"
        )
    ladder, power = [], smallest
    while power < max_seq_length:
        ladder += [power, power * 3 // 2] if power >= 2 * smallest else [power]
        power *= 2
    return tuple(b for b in ladder if b < max_seq_length) + (max_seq_length,)


def tpu_bucket_lengths(max_seq_length: int, smallest: int = SMALLEST_BUCKET) -> tuple:
    """The small bucket set for TPUs, where every sequence shape is one XLA compile.

    The buckets are `max_seq_length // 4`, `// 2` and `max_seq_length` itself (those at least
    `smallest`): at most 3 training shapes, at most 2x padding per bucket.

    Args:
        max_seq_length: int >= 1. The length the records are stored at; the last bucket.
        smallest: int >= 1. Shorter buckets are left out. Default 16.

    Returns:
        tuple of int: the bucket lengths, increasing, ending with `max_seq_length`.

    Raises:
        ValueError: when `max_seq_length` or `smallest` is less than 1.

    Example:

    >>> tpu_bucket_lengths(512)
    (128, 256, 512)
    >>> tpu_bucket_lengths(32)
    (16, 32)
    """
    if max_seq_length < 1 or smallest < 1:
        raise ValueError(f"tpu_bucket_lengths: lengths must be positive, got {max_seq_length}")
    return tuple(
        sorted(
            {b for b in (max_seq_length // 4, max_seq_length // 2) if b >= smallest}
            | {max_seq_length}
        )
    )


PER_EXAMPLE_FEATURES = ("label_vector",)  # never per token, whatever their length


def token_features(spec: dict, seq_length: int) -> dict:
    """{name: rows} of the per-token features: those of length rows·seq_length (but a
    multi-label task's label_vector, whose label count may happen to be such a multiple)."""
    return {
        name: length // seq_length
        for name, (_, length) in spec.items()
        if length >= seq_length and length % seq_length == 0 and name not in PER_EXAMPLE_FEATURES
    }


def record_lengths(input_mask, rows: int, seq_length: int):
    """Tokens used by each record of a batch [B, rows·L]: 1 + the last non-zero mask position
    over its rows (the longest RACE choice); 0 for an all-zero (fake) record."""
    mask = tf.reshape(input_mask, [-1, rows, seq_length])
    positions = tf.range(1, seq_length + 1, dtype=tf.int32)
    used = tf.where(mask > 0, positions, tf.zeros_like(positions))
    return tf.reduce_max(used, axis=[1, 2])


def bucket_of(lengths, buckets: Sequence[int]):
    """The smallest bucket ≥ each length (a length above every bucket gets the last one)."""
    edges = tf.constant(buckets, tf.int32)
    index = tf.searchsorted(edges, tf.reshape(tf.cast(lengths, tf.int32), [-1]), side="left")
    return tf.gather(edges, tf.minimum(index, len(buckets) - 1))


def slice_batch(batch: dict, tokens: dict, seq_length: int, length) -> dict:
    """`batch` with every per-token feature cut to `length` positions per row; others as they
    are."""
    out = dict(batch)
    for name, rows in tokens.items():
        x = tf.reshape(batch[name], [-1, rows, seq_length])[:, :, :length]
        out[name] = tf.reshape(x, [-1, rows * length])
    return out


def _window_order(lengths, groups: int, group_size: int, seed, window):
    """Record indices of one window: sorted by length (stably), cut into `groups` groups, the
    groups in an order drawn statelessly from (seed, window) (random when seed is None)."""
    order = tf.argsort(lengths, stable=True)
    if seed is None:
        keys = tf.random.uniform([groups])
    else:
        keys = tf.random.stateless_uniform(
            [groups], tf.stack([tf.constant(seed, tf.int64), window])
        )
    group_order = tf.argsort(keys, stable=True)
    return tf.reshape(tf.gather(tf.reshape(order, [groups, group_size]), group_order), [-1])


def bucketed_batches(
    records,
    spec: dict,
    seq_length: int,
    batch_size: int,
    seed=None,
    replicas: int = 1,
    window_batches: int = WINDOW_BATCHES,
    buckets: Optional[Sequence[int]] = None,
):
    """Training batches of `batch_size` from an infinite stream of `records`, cut to bucket lengths.

    Windows of window_batches·replicas·batch_size consecutive records are sorted by length and cut
    into groups of `replicas` batches (one optimizer step's per-replica batches, which must share
    a shape under TPU), the groups shuffled with a seed drawn from (seed, window index). Every
    step is a pure function of the seed and its position, so skipping consumed batches resumes
    exactly. (tf.data's bucket_by_sequence_length emits a batch when a bucket fills, which
    depends on the stream before it but keeps records waiting for long; this keeps the window
    local, and every record is used once per pass of the window.)"""
    buckets = tuple(buckets or bucket_lengths(seq_length))
    tokens = token_features(spec, seq_length)
    rows = tokens["input_mask"]
    group_size = replicas * batch_size
    windows = records.batch(window_batches * group_size, drop_remainder=True).enumerate()

    def regroup(window, w):
        lengths = record_lengths(w["input_mask"], rows, seq_length)
        order = _window_order(lengths, window_batches, group_size, seed, window)
        grouped = {
            k: tf.reshape(tf.gather(v, order), [window_batches * replicas, batch_size, -1])
            for k, v in w.items()
        }
        batch_lengths = tf.reduce_max(
            tf.reshape(tf.gather(lengths, order), [window_batches, group_size]), axis=1
        )
        cut = tf.repeat(bucket_of(batch_lengths, buckets), replicas)
        return tf.data.Dataset.from_tensor_slices((grouped, cut))

    return windows.flat_map(regroup).map(
        lambda batch, length: slice_batch(batch, tokens, seq_length, length)
    )


def eval_batches_plan(lengths: np.ndarray, batch_size: int, buckets: Sequence[int]):
    """[(bucket length, batch size, record indices)] for eval/predict: each bucket's records in
    file order, padded with -1 (a fake record) to whole batches. Every record appears once.

    A bucket's batches hold as many positions as `batch_size` records at the longest bucket
    (`buckets[-1]`, i.e. max_seq_length): batch_size × (buckets[-1] // length) records, a
    multiple of batch_size (so of the replicas), no more than its records need. Short buckets
    then run in few large calls instead of many tiny ones (per-call costs dominate tiny
    batches), with the activation memory of a batch_size batch at max_seq_length; results do
    not depend on the batch (each record is predicted alone)."""
    lengths = np.asarray(lengths)
    index = np.minimum(np.searchsorted(np.asarray(buckets), lengths, side="left"), len(buckets) - 1)
    plan = []
    for i, b in enumerate(buckets):
        members = np.flatnonzero(index == i)
        if len(members):
            needed = -(-len(members) // batch_size)  # batches of batch_size
            batch = batch_size * max(1, min(buckets[-1] // int(b), needed))
            pad = (-len(members)) % batch
            plan.append((int(b), batch, np.concatenate([members, -np.ones(pad, np.int64)])))
    return plan
