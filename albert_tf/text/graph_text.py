"""In-graph text ops shared by the SentencePiece and WordPiece graph tokenizers.

They are: Python's per-character Unicode steps (NFKD, NFD, lower) made to match exactly despite
TensorFlow's different ICU version, replacing some strings of a batch without tf.cond, and
[CLS] A [SEP] B [SEP] packing of ids.
"""

from __future__ import annotations

import functools
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.text import codepoints
from albert_tf.text.packing import pack_ids_graph

# planes where Unicode assigns characters (0-3 and 14); others hold none in any version
_ASSIGNABLE = list(range(0x40000)) + list(range(0xE0000, 0xF0000))


@functools.cache
def _candidates(kind: str) -> tuple:
    """Codepoints whose NFKD / lowercase may differ between Python and TF's ICU: those Python
    changes, plus those unassigned in Python's Unicode (a newer ICU may know them)."""
    change = {
        "nfkd": lambda ch: unicodedata.normalize("NFKD", ch) != ch,
        "nfd": lambda ch: unicodedata.normalize("NFD", ch) != ch,
        "lower": lambda ch: ch.lower() != ch,
    }[kind]
    out = []
    for cp in _ASSIGNABLE:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if change(ch) or unicodedata.category(ch) == "Cn":
            out.append(cp)
    return tuple(out)


@functools.cache
def overrides(kind: str) -> dict:
    """{char: Python's result} for the characters where TF's op (NFKD or lower) disagrees
    with Python's unicodedata / str.lower (Unicode version skew; NUL for lower)."""
    cps = _candidates(kind)
    chars = tf.constant([chr(c) for c in cps])
    if kind in ("nfkd", "nfd"):
        got = tf_text.normalize_utf8(chars, kind.upper()).numpy()
        want = [unicodedata.normalize(kind.upper(), chr(c)) for c in cps]
    else:
        got = tf.strings.lower(chars, encoding="utf-8").numpy()
        want = [chr(c).lower() for c in cps]
    out = {chr(c): w for c, g, w in zip(cps, got, want) if g.decode("utf-8") != w}
    if kind == "lower":
        out["\x00"] = "\x00"  # tf.strings.lower truncates a string at NUL
    return out


def char_class(chars) -> str:
    """RE2 character class for a set of characters."""
    return codepoints.ranges_to_class(ord(c) for c in chars)


def _static_table(mapping: dict):
    """A string→string StaticHashTable (default '') for per-character overrides."""
    keys = tf.constant(list(mapping.keys()) or ["\x00"])
    values = tf.constant(list(mapping.values()) or ["\x00"])
    return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), "")


def _per_char(strings, table, op):
    """Applies op to each character, except those in table, which map to their value."""
    chars = tf.strings.unicode_split(strings, "UTF-8")
    flat = chars.flat_values
    fixed = table.lookup(flat)
    mapped = tf.where(tf.strings.length(fixed) > 0, fixed, op(flat))
    return tf.strings.reduce_join(chars.with_flat_values(mapped), axis=-1)


def patch_strings(strings, special, op, exact_op):
    """op on every string, replaced by exact_op on the strings where the mask special is true.

    A gather/scatter rather than tf.cond: a lowered cond may run both branches' ops.
    """
    out = op(strings)
    idx = tf.where(special)
    return tf.tensor_scatter_nd_update(out, idx, exact_op(tf.gather_nd(strings, idx)))


def matches_pattern(strings, pattern):
    """True where a whole string matches the RE2 pattern."""
    return tf.strings.regex_full_match(strings, pattern)


class PackingMixin:
    """Adds `[CLS] A [SEP] (B [SEP])` packing to an in-graph tokenizer.

    The tokenizer class provides `tokenize`, `cls_id`, `sep_id` and `pad_id`; the SentencePiece
    and WordPiece graph tokenizers share this mixin.
    """

    def pack(self, ids_a, ids_b=None, max_seq_length=128):
        """Packs piece ids as `[CLS] A [SEP] (B [SEP])` dense model features.

        A pair longer than `max_seq_length - 3` ids (one text: `max_seq_length - 2`) is cut as
        Google cuts it: one id at a time from the end of the longer text, from B on a tie.

        Args:
            ids_a: Ragged int ids `[batch, (pieces)]` of the first texts.
            ids_b: Ragged int ids `[batch, (pieces)]` of the second texts, or `None`.
                Defaults to `None`.
            max_seq_length: int. Length of the packed features. Defaults to `128`.

        Returns:
            A dict of int32 tensors `[batch, max_seq_length]`: `input_ids`, `input_mask`
            (1 for real ids, 0 for padding) and `segment_ids` (0 for A, 1 for B).

        Raises:
            ValueError: when `max_seq_length` leaves no room for the special tokens (raised
                by `pack_ids_graph`).
        """
        return pack_ids_graph(
            ids_a, ids_b, max_seq_length, self.cls_id, self.sep_id, pad_id=self.pad_id
        )

    def encode(self, text_a, text_b=None, max_seq_length=128):
        """Tokenizes raw strings (one text or a pair per example) and packs them.

        Args:
            text_a: A string tensor `[batch]` of first texts.
            text_b: A string tensor `[batch]` of second texts, or `None`. Defaults to `None`.
            max_seq_length: int. Length of the packed features. Defaults to `128`.

        Returns:
            The dict of `pack`: int32 `input_ids`, `input_mask`, `segment_ids`
            `[batch, max_seq_length]`.
        """
        ids_b = None if text_b is None else self.tokenize(text_b)
        return self.pack(self.tokenize(text_a), ids_b, max_seq_length)

    def serving_function(self, max_seq_length=128, pair=False):
        """Builds a `tf.function` from `[batch]` strings to packed features, for SavedModels.

        Args:
            max_seq_length: int. Length of the packed features. Defaults to `128`.
            pair: Whether the function takes two string tensors (a text pair).
                Defaults to `False`.

        Returns:
            A `tf.function` with a `[None]` string input signature (two for a pair) that
            returns the dict of `encode`.
        """
        spec = tf.TensorSpec([None], tf.string)
        if pair:
            return tf.function(
                lambda a, b: self.encode(a, b, max_seq_length), input_signature=[spec, spec]
            )
        return tf.function(lambda a: self.encode(a, None, max_seq_length), input_signature=[spec])


class PythonCharOp(tf.Module):
    """A per-character TF string op (NFKD, NFD, lower) made to agree with Python: the op on
    every string, and on strings holding a character where TF's ICU and Python's Unicode
    disagree, the op per character with Python's result for those characters."""

    def __init__(self, kind: str, op, name=None):
        super().__init__(name=name)
        table = overrides(kind)
        self._op = op
        self._re = "(?s).*" + char_class(table) + ".*" if table else None
        self._table = _static_table(table)

    def __call__(self, s):
        if self._re is None:
            return self._op(s)
        return patch_strings(
            s, matches_pattern(s, self._re), self._op, lambda x: _per_char(x, self._table, self._op)
        )


def python_lower(name=None) -> PythonCharOp:
    """str.lower in the graph (tf.strings.lower, NUL and Unicode-version skew fixed)."""
    return PythonCharOp("lower", lambda x: tf.strings.lower(x, encoding="utf-8"), name=name)


def python_normalize(form: str, name=None) -> PythonCharOp:
    """unicodedata.normalize(form) in the graph (tf-text's ICU, version skew fixed)."""
    return PythonCharOp(form.lower(), lambda x: tf_text.normalize_utf8(x, form), name=name)
