"""Writing the builder's records with the library: a TrainingInstance as a tf.train.Example
in Google's feature layout, TFRecord files through tf.io.TFRecordWriter and tf.data, and
the output files: local ones written under temporary names and renamed together, remote ones
(gs://...) written straight to their final names, each appearing whole when it is closed.

TensorFlow is imported on first use, not at import time, so that the builder's other
modules (documents, tokens, masking, instances) stay light to import.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

from albert_tf.core import fileio

FEATURE_NAMES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "token_boundary",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)
FLOAT_FEATURES = frozenset({"masked_lm_weights"})
READ_BATCH = 4096  # records per tf.data batch when reading back (one by one is ~40x slower)


class ExampleSerializer:
    """Serialises TrainingInstances as tf.train.Example bytes, zero-padded to L and P.

    One template Example is reused, its eight value lists overwritten per instance, and
    serialised with deterministic=True: the protobuf runtime's map order otherwise changes
    between processes, and the builder promises byte-identical output for a seed.
    """

    def __init__(self, max_seq_length: int, max_predictions_per_seq: int):
        # deferred: keeps TensorFlow off this module's import
        import tensorflow as tf

        self.L, self.P = max_seq_length, max_predictions_per_seq
        self.example = tf.train.Example()
        feature = self.example.features.feature
        self._lists = [
            (feature[name].float_list if name in FLOAT_FEATURES else feature[name].int64_list).value
            for name in FEATURE_NAMES
        ]

    def values(self, inst) -> tuple:
        """The eight padded value lists of an instance, in FEATURE_NAMES order."""
        L, P = self.L, self.P
        n, k = len(inst.input_ids), len(inst.masked_lm_positions)
        if n > L or k > P:
            raise ValueError(f"instance of {n} tokens / {k} predictions exceeds {L} / {P}")
        pad, ppad = [0] * (L - n), [0] * (P - k)
        return (
            inst.input_ids + pad,
            [1] * n + pad,
            inst.segment_ids + pad,
            inst.token_boundary + pad,
            inst.masked_lm_positions + ppad,
            inst.masked_lm_ids + ppad,
            [1.0] * k + [0.0] * (P - k),
            [inst.next_sentence_label],
        )

    def encode(self, inst) -> bytes:
        """The serialised tf.train.Example of one instance."""
        for target, values in zip(self._lists, self.values(inst)):
            target[:] = values
        return self.example.SerializeToString(deterministic=True)


def record_writer(path: str):
    """A tf.io.TFRecordWriter on `path` (uncompressed; a context manager)."""
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    return tf.io.TFRecordWriter(path)


def iter_records(path: str) -> Iterator[bytes]:
    """The serialised records of a TFRecord file in order, read with tf.data in batches."""
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    for batch in tf.data.TFRecordDataset(path).batch(READ_BATCH).as_numpy_iterator():
        yield from batch.tolist()


class _Aborted(Exception):
    """Raised into the outputs' atomic_path blocks so that each removes what it wrote."""


class OutputSet:
    """Output TFRecord files (any filesystem), each written through fileio.atomic_path: a local
    output under a temporary name beside it, renamed into place when all are complete; a remote
    one straight to its final name (no rename on object stores), closed at commit. abort leaves
    no temporary or partial file behind."""

    def __init__(self, paths: Sequence[str]):
        self.paths = list(paths)
        self._targets = contextlib.ExitStack()
        self.tmp, self.writers = [], []
        try:
            for path in self.paths:
                self.tmp.append(self._targets.enter_context(fileio.atomic_path(path)))
                self.writers.append(record_writer(self.tmp[-1]))
        except BaseException:
            self.abort()
            raise
        self.counts = [0] * len(self.paths)
        self._next = 0

    def add_part_round_robin(self, part_path: str):
        """Deals the records of a part file to the outputs in turn (Google's order)."""
        writers, n = self.writers, len(self.writers)
        for record in iter_records(part_path):
            writers[self._next].write(record)
            self.counts[self._next] += 1
            self._next = (self._next + 1) % n

    def add_part_to(self, index: int, part_path: str):
        """Appends every record of a part file to output `index`."""
        write = self.writers[index].write
        for record in iter_records(part_path):
            write(record)
            self.counts[index] += 1

    def commit(self):
        """Closes every output (a remote one is complete then), syncs the local ones to disk
        and renames them into place."""
        for writer, tmp in zip(self.writers, self.tmp):
            writer.close()
            fileio.sync(tmp)
        self._targets.close()

    def abort(self):
        """Closes and deletes the outputs written so far (temporary names, or remote objects)."""
        for writer in self.writers:
            writer.close()
        try:
            with self._targets:
                raise _Aborted
        except _Aborted:
            pass
