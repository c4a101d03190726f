"""LiteRT files that take strings: the tokenizer in the file, on tf-text's LiteRT-registered ops
(`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`), as the raw-text SavedModels carry it.

A LiteRT file can run no TensorFlow string op (regex_replace, lower, NFKD are not LiteRT ops),
so ALBERT's preprocessing is rebuilt from what LiteRT has:

* SentencePiece: `FastSentencepieceTokenize` on a copy of the model whose normalizer does
  Google's `preprocess_text` (whitespace collapse, NFKD, accents dropped, lowercase:
  `spm_normalizer`), then Google's digit+"," fix-up as a gather through a [vocabulary, k]
  table of replacement ids (built-in GATHER, WHERE, GATHER_ND), exact;
* WordPiece (Google's Chinese releases): `FastBertNormalize` (BERT's lowercase, NFD and
  accent stripping, control characters dropped, whitespace to spaces) then
  `FastWordpieceTokenize` with its end-to-end pretokenization (whitespace and punctuation).
  Its punctuation and CJK splitting are tf-text's, not BERT's `BasicTokenizer`:
  docs/deployment.md measures how often the ids differ.

Then `[CLS] A [SEP] (B [SEP])` with Google's pair truncation (pop from the longer, the second
on ties, in closed form), zero padding to the fixed length, and the model. Sequence
classifiers (single-label, multi-label, regression; one text or a pair) and the encoder take
strings; the span, choice and token tasks need their own post-processing (windows, offsets,
word labels) and take features.
"""

from __future__ import annotations

import numpy as np
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.deploy.spm_normalizer import preprocessing_model
from albert_tf.text import spm_encode

TEXT_KINDS = ("classifier", "multi_label", "regression", "encoder")


class SentencePieceIds(tf.Module):
    """One string [1] → its piece ids [n] as Google's pipeline gives them (see the module
    docstring): FastSentencepieceTokenize on the preprocessing model, then the comma fix-up."""

    def __init__(self, model_proto: bytes, lower: bool = True):
        super().__init__(name="sentencepiece_ids")
        processor = spm.SentencePieceProcessor(model_proto=model_proto)
        self.cls_id, self.sep_id = processor.piece_to_id("[CLS]"), processor.piece_to_id("[SEP]")
        self.tokenizer = tf_text.FastSentencepieceTokenizer(preprocessing_model(model_proto, lower))
        fix = spm_encode.model_tables(processor).fix_ids
        self.fix_table = None
        if fix:
            width = max(len(v) for v in fix.values())
            table = np.tile(np.arange(processor.get_piece_size(), dtype=np.int32)[:, None], width)
            table[:, 1:] = -1
            for i, ids in fix.items():
                table[i, :] = ids + [-1] * (width - len(ids))
            self.fix_table = tf.constant(table)

    def __call__(self, text):
        ids = tf.cast(self.tokenizer.tokenize(text).flat_values, tf.int32)
        if self.fix_table is None:
            return ids
        rows = tf.reshape(tf.gather(self.fix_table, ids), [-1])
        return tf.boolean_mask(rows, rows >= 0)


class WordPieceIds(tf.Module):
    """One string [1] → its WordPiece ids [n]: FastBertNormalize, then FastWordpieceTokenize
    with its own pretokenization (whitespace and punctuation)."""

    def __init__(self, vocab: bytes, lower: bool = True):
        super().__init__(name="wordpiece_ids")
        tokens = vocab.decode("utf-8").splitlines()
        index = {t: i for i, t in enumerate(tokens)}
        self.cls_id, self.sep_id = index["[CLS]"], index["[SEP]"]
        self.normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=lower)
        self.tokenizer = tf_text.FastWordpieceTokenizer(
            vocab=tokens,
            suffix_indicator="##",
            unknown_token="[UNK]",
            no_pretokenization=False,
            token_out_type=tf.int32,
        )

    def __call__(self, text):
        return self.tokenizer.tokenize(self.normalizer.normalize(text)).flat_values


def piece_ids(tokenizer):
    """The SentencePieceIds or WordPieceIds of a `litert.Tokenizer`."""
    if tokenizer.kind == "sentencepiece":
        return SentencePieceIds(tokenizer.contents, tokenizer.lower)
    return WordPieceIds(tokenizer.contents, tokenizer.lower)


def pack(ids_module, a, b, length: int) -> dict:
    """[CLS] a [SEP] (b [SEP]) cut with Google's pair truncation and zero-padded: int32
    input_ids, input_mask, segment_ids [1, length]."""
    cls = tf.constant([ids_module.cls_id], tf.int32)
    sep = tf.constant([ids_module.sep_id], tf.int32)
    if b is None:
        a = a[: length - 2]
        ids = tf.concat([cls, a, sep], 0)
        segments = tf.zeros_like(ids)
    else:
        room = length - 3
        la, lb = tf.size(a), tf.size(b)
        # Google's loop pops the longer text (the second on ties) until both fit: in closed form
        keep_a = tf.minimum(la, tf.maximum(room - lb, (room + 1) // 2))
        keep_b = tf.minimum(lb, room - keep_a)
        ids = tf.concat([cls, a[:keep_a], sep, b[:keep_b], sep], 0)
        segments = tf.concat([tf.zeros([keep_a + 2], tf.int32), tf.ones([keep_b + 1], tf.int32)], 0)
    pad = [[0, length - tf.size(ids)]]
    as_row = lambda x: tf.reshape(tf.pad(x, pad), [1, length])
    return {
        "input_ids": as_row(ids),
        "input_mask": as_row(tf.ones_like(ids)),
        "segment_ids": as_row(segments),
    }


def text_serving(model, kind: str, tokenizer, max_seq_length: int, pair: bool, select):
    """(serve function on {"text"} or {"text_a", "text_b"} string [1] tensors, their specs, the
    tokenizer module to track with the model) of a string-input file; `select(kind, outputs)`
    picks the file's outputs.

    Raises:
        ValueError: A kind that takes no strings, or no tokenizer.
    """
    if kind not in TEXT_KINDS:
        raise ValueError(
            f"text_input: a {kind} file takes features (its windows, offsets or word labels "
            f"are post-processing outside the model); strings go into {', '.join(TEXT_KINDS)}"
        )
    if tokenizer is None:
        raise ValueError("text_input: give spm_model_file or vocab_file (the file's tokenizer)")
    ids_module = piece_ids(tokenizer)
    names = ("text_a", "text_b") if pair else ("text",)
    specs = {name: tf.TensorSpec([1], tf.string, name=name) for name in names}

    def serve(strings):
        a = ids_module(strings[names[0]])
        b = ids_module(strings[names[1]]) if pair else None
        return select(kind, model(pack(ids_module, a, b, max_seq_length), training=False))

    return serve, specs, ids_module
