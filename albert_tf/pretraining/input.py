"""tf.data over pretraining TFRecords in Google's feature layout (static shapes for TPU/XLA)."""

import tensorflow as tf

from albert_tf.engine.records import decode, shuffled_epochs


def pretraining_feature_spec(max_seq_length: int, max_predictions_per_seq: int) -> dict:
    """Google's create_pretraining_data.py / run_pretraining.py features."""
    L, P = max_seq_length, max_predictions_per_seq
    return {
        "input_ids": ("int64", L),
        "input_mask": ("int64", L),
        "segment_ids": ("int64", L),
        "token_boundary": ("int64", L),
        "masked_lm_positions": ("int64", P),
        "masked_lm_ids": ("int64", P),
        "masked_lm_weights": ("float", P),
        "next_sentence_labels": ("int64", 1),
    }


def expand_patterns(input_file) -> list:
    """Comma-separated paths or globs → sorted file list; a clear error when nothing matches."""
    patterns = input_file.split(",") if isinstance(input_file, str) else list(input_file)
    files = []
    for pattern in patterns:
        pattern = str(pattern).strip()
        if not pattern:
            continue
        matched = (
            sorted(tf.io.gfile.glob(pattern))
            if any(c in pattern for c in "*?[")
            else ([pattern] if tf.io.gfile.exists(pattern) else [])
        )
        if not matched:
            raise FileNotFoundError(f"input_file: no file matches {pattern!r}")
        files.extend(matched)
    if not files:
        raise FileNotFoundError("input_file is empty")
    return files


def count_records(input_file, limit: int) -> int:
    """The records of `input_file` (comma-separated paths or globs), counted up to `limit`:
    reads no further than that, so it is cheap on a large corpus.

    Args:
        input_file: str or list. The TFRecord files.
        limit: int. The most records to count.

    Returns:
        int: min(the number of records, limit).

    Example:

    >>> from albert_tf.pretraining.input import count_records
    >>> count_records("tests/data/fixtures/pretraining.tfrecord", 100)
    32
    """
    records = tf.data.TFRecordDataset(expand_patterns(input_file)).take(limit)
    return int(records.reduce(0, lambda n, _: n + 1))


def pretraining_dataset(
    input_file,
    batch_size: int,
    max_seq_length: int,
    max_predictions_per_seq: int,
    is_training: bool,
    input_context: tf.distribute.InputContext = None,
    seed=None,
):
    """Batches of int32/float32 feature dicts. Training: shuffled files, interleaved reads (up to
    4 files at once), shuffle buffer 100, repeat; always drop_remainder (static shapes)."""
    files = expand_patterns(input_file)
    spec = pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    pipelines = input_context.num_input_pipelines if input_context else 1
    index = input_context.input_pipeline_id if input_context else 0
    if is_training:
        ds = tf.data.Dataset.from_tensor_slices(files)
        if pipelines > 1 and len(files) >= pipelines:
            ds = ds.shard(pipelines, index)
        ds = shuffled_epochs(ds, len(files), seed)
        ds = ds.interleave(
            tf.data.TFRecordDataset,
            cycle_length=min(4, len(files)),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=seed is not None,
        )
        if pipelines > 1 and len(files) < pipelines:
            ds = ds.shard(pipelines, index)
        # seeded: every iterator replays the same order (a resumed run skips what it consumed)
        ds = ds.shuffle(100, seed=seed, reshuffle_each_iteration=seed is None)
    else:
        ds = tf.data.TFRecordDataset(files)
        if pipelines > 1:
            ds = ds.shard(pipelines, index)
    ds = ds.batch(batch_size, drop_remainder=True)
    ds = ds.map(lambda s: decode(s, spec), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)
