"""The inputs of the text models' `fit`/`evaluate`/`predict`, turned into one tf.data pipeline.

Python lists, NumPy arrays, pandas columns (or tuples / dicts of them) and tf.data datasets of
strings are sliced, batched and mapped through the model's preprocessor; feature dicts pass
through untouched.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

DEFAULT_BATCH_SIZE = 32


def _array(x):
    """A list / NumPy array / pandas column as a NumPy array; dicts and tuples (a text pair)
    keep their structure; a pandas DataFrame is the tuple of its columns."""
    if isinstance(x, dict):
        return {k: _array(v) for k, v in x.items()}
    if hasattr(x, "columns"):
        x = tuple(x[c] for c in x.columns)
    if isinstance(x, tuple):
        return tuple(_array(v) for v in x)
    if tf.is_tensor(x):
        return x
    return np.asarray(getattr(x, "values", x))


def is_features(x) -> bool:
    """Tells whether x is already model features (a dict with `input_ids`), not raw text.

    Args:
        x: The inputs, or a `tf.data.Dataset` (its element spec is checked).

    Returns:
        True for a feature dict (or a dataset of them, with or without labels).
    """
    if isinstance(x, tf.data.Dataset):
        x = x.element_spec
        x = x[0] if isinstance(x, tuple) else x
    return isinstance(x, dict) and "input_ids" in x


def _unbatched(ds) -> bool:
    """A dataset of single examples: its first tensor is a scalar."""
    first = tf.nest.flatten(ds.element_spec)[0]
    return first.shape.rank == 0


def _num_examples(data) -> int:
    """Number of examples of in-memory data (the length of its first array)."""
    return len(tf.nest.flatten(data)[0])


def make_dataset(preprocessor, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
    """Builds the batched tf.data.Dataset of `(features[, y[, sample_weight]])` for any x.

    A `tf.data.Dataset` x keeps its own labels and batching (an unbatched one is batched by
    `batch_size`). Raw text is mapped through the preprocessor; feature dicts are not.

    Args:
        preprocessor: The model's preprocessor layer, or `None` (then x must be features).
        x: Raw texts or feature dicts (lists, NumPy arrays, pandas columns or a DataFrame, a
            tuple or dict of them), or a `tf.data.Dataset`.
        y: Labels for in-memory x, or `None`. Defaults to `None`.
        sample_weight: Per-example weights for in-memory x, or `None`. Defaults to `None`.
        batch_size: int. Batch size; `None` means 32. Defaults to `None`.
        shuffle: Whether in-memory data is shuffled, reshuffled every epoch.
            Defaults to `False`.

    Returns:
        A prefetched `tf.data.Dataset`.

    Raises:
        ValueError: when y or sample_weight is given with a dataset x, when sample_weight
            comes without y, or when raw text comes without a preprocessor.
    """
    batch_size = batch_size or DEFAULT_BATCH_SIZE
    if isinstance(x, tf.data.Dataset):
        if y is not None or sample_weight is not None:
            raise ValueError(
                "with a tf.data.Dataset x, the labels come from the dataset: do not "
                "pass y or sample_weight"
            )
        ds = x.batch(batch_size) if _unbatched(x) else x
    else:
        if y is None and sample_weight is not None:
            raise ValueError("sample_weight needs y")
        data = tuple(_array(d) for d in (x, y, sample_weight) if d is not None)
        ds = tf.data.Dataset.from_tensor_slices(data)
        if shuffle:
            ds = ds.shuffle(_num_examples(data), reshuffle_each_iteration=True)
        ds = ds.batch(batch_size)
    if not is_features(ds):
        if preprocessor is None:
            raise ValueError(
                "raw text needs a preprocessor: build the model with one (or "
                "from_pretrained), or pass feature dicts"
            )
        ds = ds.map(lambda *e: preprocessor(*e), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def num_steps(ds, epochs, steps_per_epoch=None):
    """Counts the training steps of `epochs` over a dataset.

    Args:
        ds: The batched `tf.data.Dataset`.
        epochs: int. Number of epochs.
        steps_per_epoch: int or `None`. Steps per epoch; `None` uses the dataset's
            cardinality. Defaults to `None`.

    Returns:
        The number of steps, or `None` when the dataset's length is unknown or infinite.
    """
    if steps_per_epoch is None:
        n = int(ds.cardinality())
        if n < 0:
            return None
        steps_per_epoch = n
    return int(steps_per_epoch) * int(epochs)
