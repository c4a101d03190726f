"""ALBERT's tokenization inside the TensorFlow graph (SavedModel, tf.data, serving).

`GraphTokenizer` runs Google's `preprocess_text` with TF ops (ASCII strings skip the Unicode
steps, identities on them) and then tf-text's SentencePiece (FastSentencepieceTokenizer, whose
Viterbi tie-breaking matches sentencepiece 0.2), and applies Google's comma-digit fix-up as a
ragged gather through a table precomputed from the vocabulary. It gives the ids
`FullTokenizer` gives (the Python path is the reference); docs/tokenization.md lists the few
inputs where it cannot.
"""

from __future__ import annotations

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.core import fileio
from albert_tf.text import codepoints, spm_encode, tokenization
from albert_tf.text.graph_text import (
    PackingMixin,
    char_class,
    matches_pattern,
    patch_strings,
    python_lower,
    python_normalize,
)
from albert_tf.text.graph_wordpiece import GraphWordPieceTokenizer

__all__ = ["GraphTokenizer", "GraphTokenizerLayer", "make_graph_tokenizer"]


class GraphTokenizer(PackingMixin, tf.Module):
    """Raw strings → ragged int32 ids, as FullTokenizer(spm_model_file).tokenize(preprocess_text).

    preprocess: run Google's preprocess_text in-graph (lower = do_lower_case); False feeds the
    strings to SentencePiece as they are (FullTokenizer.tokenize alone). sample: subword
    sampling (nbest 64, alpha 0.1) as encode_pieces(sample=True).
    """

    def __init__(
        self,
        spm_model_file,
        do_lower_case=True,
        preprocess=True,
        sample=False,
        remove_space=True,
        name=None,
    ):
        super().__init__(name=name)
        self.do_lower_case = bool(do_lower_case)
        self.preprocess = bool(preprocess)
        self.remove_space = bool(remove_space)
        py = tokenization.FullTokenizer(spm_model_file=spm_model_file)
        self.vocab_size = py.vocab_size
        self.pad_id, self.unk_id = py.pad_id, py.unk_id
        self.cls_id, self.sep_id, self.mask_id = py.cls_id, py.sep_id, py.mask_id
        proto = py.sp_model.serialized_model_proto()
        self.model_proto = proto  # the SentencePiece model's bytes, for saving with a model
        self.sample = bool(sample)
        if sample:
            self._sp = tf_text.SentencepieceTokenizer(
                model=proto,
                out_type=tf.int32,
                nbest_size=spm_encode.SAMPLE_NBEST_SIZE,
                alpha=spm_encode.SAMPLE_ALPHA,
            )
        else:
            # FastSentencepieceTokenizer breaks Viterbi ties (equal-score segmentations such
            # as "0"+"00" vs "00"+"0") as sentencepiece 0.2 does; tf-text's
            # SentencepieceTokenizer, built on an older sentencepiece, does not always.
            self._sp = tf_text.FastSentencepieceTokenizer(proto)
        self._build_fix_table(py)
        self._build_text_tables()

    # ----- construction

    def _build_fix_table(self, py):
        """Per-id replacement ids for Google's comma-digit fix-up ([id] for other ids)."""
        info = py._sp
        rows = [info.fix_ids.get(i, [i]) for i in range(self.vocab_size)]
        self._has_fix = bool(info.fix_ids)
        self._fix_flags = tf.constant([i in info.fix_ids for i in range(self.vocab_size)])
        self._fix_table = tf.ragged.constant(rows, dtype=tf.int32, row_splits_dtype=tf.int64)

    def _build_text_tables(self):
        """Regexes of Python's whitespace / combining sets and the NFKD / lower overrides."""
        ws_cps = codepoints.whitespace_codepoints()
        ws = [chr(c) for c in ws_cps]
        # runs of 2+ whitespace, or one that is not a plain space (a lone " " stays as is)
        self._ws_re = f"(?:{char_class(ws)}){{2,}}|{char_class(c for c in ws if c != ' ')}"
        ascii_ws = [c for c in ws_cps if c < 0x80]
        self._ascii_ws_re = (
            f"{codepoints.ranges_to_class(ascii_ws)}{{2,}}|"
            f"{codepoints.ranges_to_class(c for c in ascii_ws if c != 0x20)}"
        )
        word = codepoints.ranges_to_class(c for c in range(0x80) if c not in ascii_ws)
        # strings preprocess_text only lowercases: ASCII, and with remove_space, words
        # separated by single spaces (no other whitespace, none at either end)
        self._ascii_re = "[\\x00-\\x7f]*"
        self._clean_re = f"(?:{word}+(?: {word}+)*)?" if self.remove_space else self._ascii_re
        self._comb_re = codepoints.ranges_to_class(codepoints.combining_codepoints())
        self._nfkd = python_normalize("NFKD")
        self._lower = python_lower()

    # ----- preprocessing

    def preprocess_text(self, strings):
        """preprocess_text on a string tensor: whitespace collapse, NFKD, drop combining, lower.

        Fast paths, exact because the Unicode steps are identities on ASCII: strings of ASCII
        words between single spaces (most text) are only lowercased, other ASCII strings only
        collapsed and lowercased; the rest take every step.
        """
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        s = tf.reshape(strings, [-1])  # any rank, a scalar included
        out = patch_strings(
            s, ~matches_pattern(s, self._clean_re), self._lower_ascii, self._preprocess_rest
        )
        return tf.reshape(out, tf.shape(strings))

    def _preprocess_rest(self, s):
        """preprocess_text of strings that are not clean ASCII: ASCII ones without the Unicode
        steps, the others (and any invalid UTF-8) with all of them."""
        if not self.remove_space:  # clean already means ASCII
            return self._preprocess_unicode(s)
        return patch_strings(
            s, ~matches_pattern(s, self._ascii_re), self._preprocess_ascii, self._preprocess_unicode
        )

    def _preprocess_ascii(self, s):
        """preprocess_text of ASCII strings: ASCII whitespace collapse and lowercase."""
        return self._lower_ascii(
            tf.strings.strip(tf.strings.regex_replace(s, self._ascii_ws_re, " "))
        )

    def _lower_ascii(self, s):
        """str.lower of ASCII strings (do_lower_case), else the strings as they are."""
        return tf.strings.lower(s) if self.do_lower_case else s

    def _preprocess_unicode(self, s):
        """Every step of preprocess_text, for any string (invalid UTF-8 dropped first)."""
        s = tf.strings.unicode_transcode(s, "UTF-8", "UTF-8", errors="ignore")
        if self.remove_space:
            # after the collapse the only whitespace left is a single " " at either end
            s = tf.strings.strip(tf.strings.regex_replace(s, self._ws_re, " "))
        return self.normalize(s)

    def normalize(self, s):
        """preprocess_text's per-character steps (NFKD, drop combining marks, lower), without
        the whitespace collapse: applied to single characters it says what each one becomes."""
        s = tf.strings.regex_replace(self._nfkd(s), self._comb_re, "")
        return self._lower(s) if self.do_lower_case else s

    # ----- tokenization

    def _fix_commas(self, ids):
        """Google's comma-digit fix-up as a gather of replacement rows ([id] for other ids)."""
        if not self._has_fix:
            return ids
        flat = ids.flat_values

        def fixed():
            rows = tf.gather(self._fix_table, flat)
            return ids.with_flat_values(rows).merge_dims(1, 2)

        return tf.cond(tf.reduce_any(tf.gather(self._fix_flags, flat)), fixed, lambda: ids)

    def tokenize(self, strings):
        """Ids of a string tensor: [batch] → ragged [batch, (pieces)]; a scalar → [pieces]."""
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        scalar = strings.shape.rank == 0
        if scalar:
            strings = tf.reshape(strings, [1])
        if self.preprocess:
            strings = self.preprocess_text(strings)
        ids = tf.cast(self._sp.tokenize(strings), tf.int32)
        ids = ids.with_row_splits_dtype(tf.int64)
        ids = self._fix_commas(ids)
        return ids[0] if scalar else ids

    __call__ = tokenize

    def detokenize(self, ids):
        """SentencePiece's text of ids (fix-up pieces read back as SentencePiece decodes them)."""
        return self._sp.detokenize(ids)


def make_graph_tokenizer(spm_model_file=None, vocab_file=None, do_lower_case=True):
    """The in-graph tokenizer of a SentencePiece model (GraphTokenizer) or, for Google's
    Chinese releases, of a WordPiece vocabulary (GraphWordPieceTokenizer)."""
    if spm_model_file:
        return GraphTokenizer(str(spm_model_file), do_lower_case=do_lower_case)
    if vocab_file:
        return GraphWordPieceTokenizer(str(vocab_file), do_lower_case=do_lower_case)
    raise ValueError(
        "an in-graph tokenizer needs spm_model_file (SentencePiece) or vocab_file (WordPiece)"
    )


@keras.saving.register_keras_serializable(package="albert_tf")
class GraphTokenizerLayer(keras.layers.Layer):
    """Keras layer: raw strings → packed features (or ragged ids when max_seq_length is None).

    A `.keras` file stores the tokenizer's SentencePiece model or WordPiece vocabulary (an
    asset), not its path, so it loads in another folder or machine; a layer rebuilt from
    its config alone gets its tokenizer from `load_assets`.
    """

    ASSET_NAME = "spm.model"
    VOCAB_ASSET_NAME = "vocab.txt"

    def __init__(
        self,
        spm_model_file=None,
        do_lower_case=True,
        max_seq_length=None,
        vocab_file=None,
        **kwargs,
    ):
        kwargs.update(trainable=False, dtype="string")  # a saved config carries both
        super().__init__(**kwargs)
        self.do_lower_case = do_lower_case
        self.max_seq_length = max_seq_length
        self.tokenizer = None
        if spm_model_file is not None or vocab_file is not None:
            self._use_model(spm_model_file, vocab_file)

    def _use_model(self, spm_model_file=None, vocab_file=None):
        self.tokenizer = make_graph_tokenizer(spm_model_file, vocab_file, self.do_lower_case)

    @property
    def wordpiece(self) -> bool:
        return isinstance(self.tokenizer, GraphWordPieceTokenizer)

    def call(self, text_a, text_b=None):
        """Tokenizes (and packs, when max_seq_length is set) one or two string tensors."""
        if self.tokenizer is None:
            raise ValueError(
                f"GraphTokenizerLayer {self.name!r} has no tokenizer: pass "
                "spm_model_file or vocab_file, or load it from a .keras file"
            )
        if self.max_seq_length is None:
            return self.tokenizer.tokenize(text_a)
        return self.tokenizer.encode(text_a, text_b, self.max_seq_length)

    def compute_output_spec(self, text_a, text_b=None):
        """Output shapes without the model (a functional model is rebuilt before its
        assets load): ragged int32 ids [..., (pieces)], or a dict of int32 [..., length]."""
        shape = tuple(text_a.shape)
        if self.max_seq_length is None:
            return keras.KerasTensor(shape + (None,), "int32", ragged=True)
        return {
            name: keras.KerasTensor(shape + (self.max_seq_length,), "int32")
            for name in ("input_ids", "input_mask", "segment_ids")
        }

    def get_config(self):
        """Constructor arguments, for Keras serialisation (the model itself is an asset)."""
        config = super().get_config()
        config.update(do_lower_case=self.do_lower_case, max_seq_length=self.max_seq_length)
        return config

    def save_assets(self, dir_path):
        """Writes the SentencePiece model's bytes (or the WordPiece vocabulary) into the
        saved file's assets."""
        if self.tokenizer is None:
            raise ValueError(f"GraphTokenizerLayer {self.name!r} has no tokenizer to save")
        if self.wordpiece:
            fileio.write_text(
                fileio.join(dir_path, self.VOCAB_ASSET_NAME), self.tokenizer.vocab_text
            )
        else:
            fileio.write_bytes(fileio.join(dir_path, self.ASSET_NAME), self.tokenizer.model_proto)

    def load_assets(self, dir_path):
        """Builds the tokenizer from the asset `save_assets` wrote."""
        vocab = fileio.join(dir_path, self.VOCAB_ASSET_NAME)
        if fileio.exists(vocab):
            self._use_model(vocab_file=vocab)
        else:
            self._use_model(fileio.join(dir_path, self.ASSET_NAME))
