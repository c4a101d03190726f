"""TFRecord features shared by every data builder: atomic writing, keyed caches, parsing.

A `spec` maps a feature name to (kind, length) with kind "int64" or "float"; records are dicts of
sequences (or scalars for length 1). Parsed int64 features become int32, as Google's input_fn did.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Callable, Iterable

import numpy as np
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.fileio import atomic_path, file_fingerprint, write_text_atomic  # noqa: F401


def _feature(kind, values):
    values = np.asarray(values).reshape(-1)
    if kind == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values.astype(np.int64)))
    if kind == "float":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values.astype(np.float32)))
    raise ValueError(f"unknown feature kind {kind!r} (use 'int64' or 'float')")


def serialize(record: dict, spec: dict) -> bytes:
    """One tf.train.Example with exactly the spec's features, lengths checked."""
    feats = {}
    for name, (kind, length) in spec.items():
        if name not in record:
            raise ValueError(f"record lacks feature {name!r}")
        values = np.asarray(record[name]).reshape(-1)
        if len(values) != length:
            raise ValueError(f"feature {name!r} has length {len(values)}, the spec says {length}")
        feats[name] = _feature(kind, values)
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


def write_records(path, records: Iterable[dict], spec: dict) -> int:
    """Write records to `path` (local: under a temporary name, renamed only when complete;
    remote: straight to the object, removed if writing fails); returns the count."""
    count = 0
    with atomic_path(path) as tmp:
        with tf.io.TFRecordWriter(tmp) as writer:
            for record in records:
                writer.write(serialize(record, spec))
                count += 1
    return count


def parse_spec(spec: dict) -> dict:
    kinds = {"int64": tf.int64, "float": tf.float32}
    return {n: tf.io.FixedLenFeature([length], kinds[k]) for n, (k, length) in spec.items()}


def decode(serialized, spec: dict) -> dict:
    """Parse one (or a batch of) serialized examples; int64 → int32 (TPUs want int32)."""
    parse = tf.io.parse_example if serialized.shape.rank == 1 else tf.io.parse_single_example
    parsed = parse(serialized, parse_spec(spec))
    return {n: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t for n, t in parsed.items()}


def shuffled_epochs(ds, buffer_size: int, seed=None):
    """`ds` repeated forever, epoch e shuffled with a seed drawn statelessly from (seed, e): the
    order is a pure function of the seed and the position, the same for every iterator of the
    dataset, so a resumed run that skips its consumed batches sees an unbroken run's batches.

    tf.data's reshuffle_each_iteration=True draws each epoch's seeds from one generator shared by
    all iterators of the dataset: a second iterator (Keras' first-batch probe under a strategy,
    then the training iterator) gets other orders, which depend on how far the first one read.
    Without a seed: a new random order every epoch (nothing to reproduce)."""
    if seed is None:
        return ds.shuffle(buffer_size, reshuffle_each_iteration=True).repeat()
    base = tf.constant(seed, tf.int64)

    def epoch(e):
        # the order is a function of `seed` alone: a global seed (keras.utils.set_random_seed)
        # would be mixed in, and a global seed of 0 makes tf.data compare the seed tensor as a
        # Python bool
        tf.compat.v1.get_default_graph().seed = None
        epoch_seed = tf.random.stateless_uniform(
            [], tf.stack([base, e]), minval=None, maxval=None, dtype=tf.int64
        )
        return ds.shuffle(buffer_size, seed=epoch_seed, reshuffle_each_iteration=False)

    return tf.data.Dataset.counter().flat_map(epoch)


def cache_key(params: dict) -> str:
    """A short stable hash of everything that changes the features."""
    blob = json.dumps(params, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def cached_records(
    cache_dir, name: str, params: dict, spec: dict, make_records: Callable[[], Iterable[dict]]
):
    """Path of `{cache_dir}/{name}-{key}.tf_record`, built by `make_records()` if absent.

    The key hashes `params` (task, split, max_seq_length, tokenizer fingerprint, lowercasing...)
    and the spec, so a change of any of them builds a new file instead of silently reusing a
    stale one (Google's cache ignored max_seq_length). A `.json` beside it records the params;
    it is written after the records, so it marks them complete (on a bucket too, where a killed
    upload of the records leaves no meta), and records without it are rebuilt.
    Returns (path, number of records).
    """
    key = cache_key({"params": params, "spec": {k: list(v) for k, v in spec.items()}})
    path = fileio.join(os.fspath(cache_dir), f"{name}-{key}.tf_record")
    meta = path + ".json"
    if fileio.exists(path) and fileio.exists(meta):
        return path, fileio.read_json(meta)["num_records"]
    count = write_records(path, make_records(), spec)
    write_text_atomic(
        meta,
        json.dumps({"params": params, "num_records": count}, indent=1, sort_keys=True, default=str),
    )
    return path, count
