"""The builder's hand-written tf.train.Example encoder and numpy CRC32C TFRecord framing,
as they were until issue 13 replaced them with tf.train.Example + tf.io.TFRecordWriter
(albert_tf/pretraining/writer.py). Kept here only so that bench_tfrecord_writer.py can
re-measure that decision; nothing in albert_tf uses it.
"""

import struct
from typing import Sequence

import numpy as np

_VARINT_CACHE: dict = {}


def _varint(value: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varint_table(size: int) -> list:
    """Varint bytes of 0..size-1, cached."""
    table = _VARINT_CACHE.get(size)
    if table is None:
        table = _VARINT_CACHE[size] = [_varint(i) for i in range(size)]
    return table


def _ld(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return tag + _varint(len(payload)) + payload


class ExampleEncoder:
    """Encodes TrainingInstances as tf.train.Example bytes in Google's feature layout.

    Builds the protobuf wire format directly (Example.features.feature map entries,
    Int64List/FloatList packed), which parses exactly like tf.train.Example output.
    Each map entry is a prefix that depends only on the feature and the payload
    length (cached) followed by the packed values.
    """

    def __init__(self, max_seq_length: int, max_predictions_per_seq: int, vocab_size: int):
        self.L = max_seq_length
        self.P = max_predictions_per_seq
        self.table = _varint_table(max(vocab_size, max_seq_length, 2))
        self._prefixes: dict = {}

    def _prefix(self, name: str, size: int) -> bytes:
        """Map-entry bytes before a packed payload of `size` bytes."""
        key = (name, size)
        prefix = self._prefixes.get(key)
        if prefix is None:
            kind = b"\x12" if name == "masked_lm_weights" else b"\x1a"  # float / int64 list
            values = b"\x0a" + _varint(size)  # packed `value` field
            feature = kind + _varint(len(values) + size)
            entry = (
                _ld(b"\x0a", name.encode())
                + b"\x12"
                + _varint(len(feature) + len(values) + size)
                + feature
                + values
            )
            prefix = b"\x0a" + _varint(len(entry) + size) + entry
            self._prefixes[key] = prefix
        return prefix

    def _field(self, name: str, packed: bytes) -> bytes:
        return self._prefix(name, len(packed)) + packed

    def encode(self, inst) -> bytes:
        """Serialised tf.train.Example of one instance, zero-padded to L and P."""
        L, P, table, field = self.L, self.P, self.table, self._field
        n = len(inst.input_ids)
        k = len(inst.masked_lm_positions)
        if n > L or k > P:
            raise ValueError(f"instance of {n} tokens / {k} predictions exceeds {L} / {P}")
        pad, ppad = b"\x00" * (L - n), b"\x00" * (P - k)
        features = b"".join(
            (
                field("input_ids", b"".join([table[t] for t in inst.input_ids]) + pad),
                field("input_mask", b"\x01" * n + pad),
                field("segment_ids", b"\x00" * (inst.len_a + 2) + b"\x01" * (inst.len_b + 1) + pad),
                field("token_boundary", bytes(inst.token_boundary) + pad),
                field(
                    "masked_lm_positions",
                    b"".join([table[p] for p in inst.masked_lm_positions]) + ppad,
                ),
                field("masked_lm_ids", b"".join([table[t] for t in inst.masked_lm_ids]) + ppad),
                field("masked_lm_weights", _ONE_F32 * k + _ZERO_F32 * (P - k)),
                field("next_sentence_labels", table[inst.next_sentence_label]),
            )
        )
        return b"\x0a" + _varint(len(features)) + features


_ONE_F32 = struct.pack("<f", 1.0)
_ZERO_F32 = struct.pack("<f", 0.0)


# --------------------------------------------------------------------------- TFRecord framing


def _crc32c_table() -> np.ndarray:
    """Byte table of the reflected Castagnoli CRC (polynomial 0x82F63B78)."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0x82F63B78), table >> 1)
    return table.astype(np.uint32)


_CRC_TABLE = _crc32c_table()


def crc32c_many(records: Sequence[bytes]) -> list:
    """CRC32C of each bytes object, computed column-wise over the batch with numpy."""
    if not records:
        return []
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
    order = np.argsort(-lengths, kind="stable")
    width = int(lengths[order[0]])
    crc = np.full(len(records), 0xFFFFFFFF, dtype=np.uint32)
    if width:
        rows = b"".join(records[i].ljust(width, b"\x00") for i in order)
        cols = np.frombuffer(rows, dtype=np.uint8).reshape(len(records), width).T.copy()
        active = len(records) - np.searchsorted(
            lengths[order][::-1], np.arange(width), side="right"
        )
        table, c = _CRC_TABLE, crc
        for j in range(width):
            a = int(active[j])
            head = c[:a]
            head[:] = table[(head ^ cols[j, :a]) & 0xFF] ^ (head >> 8)
        crc = c
    out = np.empty_like(crc)
    out[order] = crc ^ np.uint32(0xFFFFFFFF)
    return out.tolist()


def _mask_crc(crc: int) -> int:
    """TFRecord's masked CRC."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


_HEADER_CACHE: dict = {}


def _record_header(length: int) -> bytes:
    """The 12-byte TFRecord header (length and its masked CRC), cached by length."""
    header = _HEADER_CACHE.get(length)
    if header is None:
        raw = struct.pack("<Q", length)
        header = raw + struct.pack("<I", _mask_crc(crc32c_many([raw])[0]))
        _HEADER_CACHE[length] = header
    return header


def frame_records(records: Sequence[bytes]) -> bytes:
    """TFRecord framing of a batch of serialised records."""
    crcs = crc32c_many(records)
    parts = []
    for data, crc in zip(records, crcs):
        parts.append(_record_header(len(data)))
        parts.append(data)
        parts.append(struct.pack("<I", _mask_crc(crc)))
    return b"".join(parts)


class FramingWriter:
    """Writes records to a file framed by frame_records in batches of 512, as the builder's
    round loop did; has the write / close / with interface of tf.io.TFRecordWriter."""

    def __init__(self, path: str):
        self.file = open(path, "wb")
        self.batch: list = []

    def write(self, record: bytes):
        self.batch.append(record)
        if len(self.batch) >= 512:
            self.file.write(frame_records(self.batch))
            self.batch = []

    def close(self):
        self.file.write(frame_records(self.batch))
        self.batch = []
        self.file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
