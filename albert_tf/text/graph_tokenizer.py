"""ALBERT's tokenization inside the TensorFlow graph (SavedModel, tf.data, serving).

`GraphTokenizer` runs Google's `preprocess_text` with TensorFlow ops (ASCII strings skip the
Unicode steps, which do nothing to them), then tf-text's SentencePiece
(`FastSentencepieceTokenizer`, whose Viterbi tie-breaking matches sentencepiece 0.2), and applies
Google's comma-digit fix-up as a ragged gather through a table precomputed from the vocabulary.
It gives the ids `FullTokenizer` gives (the Python tokenizer is the reference);
docs/tokenization.md lists the few inputs where it cannot. `GraphTokenizerLayer` wraps it (or
the WordPiece equivalent) as a Keras layer that `.keras` files save with its model.
"""

from __future__ import annotations

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.core import fileio
from albert_tf.text import codepoints, sp_batches, spm_encode, tokenization
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
    """SentencePiece tokenizer in TensorFlow ops: string tensors to ragged int32 piece ids.

    It gives the ids of `FullTokenizer(spm_model_file=...)` applied to
    `preprocess_text(text, lower=do_lower_case)`, but as graph ops, so it runs in `tf.data`,
    inside `tf.function` and in exported SavedModels. `encode` and `pack` also build the
    `[CLS] A [SEP] B [SEP]` features (`input_ids`, `input_mask`, `segment_ids`) the models take.
    Special ids (`cls_id`, `sep_id`, `mask_id`, `pad_id`, `unk_id`) and `vocab_size` are
    attributes.

    The first tokenizer built in a process spends a few seconds comparing TensorFlow's Unicode
    tables with Python's (so that normalisation matches `preprocess_text`); later ones reuse
    the result.

    Args:
        spm_model_file: Path of the SentencePiece model (e.g. a release's `30k-clean.model`).
        do_lower_case: Whether the in-graph preprocessing lowercases. Defaults to `True`.
        preprocess: Whether to apply Google's `preprocess_text` in the graph. `False` feeds
            the strings to SentencePiece as they are, like `FullTokenizer.tokenize` alone.
            Defaults to `True`.
        sample: Whether to sample segmentations (subword regularisation, nbest 64, alpha 0.1),
            like `FullTokenizer.tokenize(text, sample=True)`. Defaults to `False`.
        remove_space: Whether the preprocessing collapses whitespace runs and strips the ends.
            Defaults to `True`.
        name: Name of the `tf.Module`. Defaults to `None`.

    Raises:
        ValueError: when the model lacks `[CLS]`, `[SEP]` or `[MASK]` (raised by
            `FullTokenizer`).

    Example:

    >>> import tensorflow as tf, albert_tf
    >>> tokenizer = albert_tf.GraphTokenizer("tests/data/fixtures/albert_tiny/30k-clean.model")
    >>> ids = tokenizer.tokenize(tf.constant(["Héllo,   World!", "the cat"]))
    >>> ids.to_list()
    [[13, 397, 489, 113, 16, 248, 109, 338, 588], [14, 13, 65, 51, 56]]
    >>> tokenizer("Hello").numpy().tolist()
    [13, 397, 489, 113]
    >>> features = tokenizer.encode(tf.constant(["Hello"]), tf.constant(["the cat"]), 10)
    >>> features["input_ids"].numpy().tolist()
    [[2, 13, 397, 489, 113, 3, 14, 13, 65, 3]]
    >>> features["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 0, 1, 1, 1, 1]]
    >>> tokenizer.detokenize(ids).numpy().tolist()
    [b'hello, world!', b'the cat']
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
        """Applies Google's `preprocess_text` to a string tensor, in TensorFlow ops.

        The steps are those of `preprocess_text`: whitespace collapse (when `remove_space`),
        NFKD, dropping combining marks, lowercasing (when `do_lower_case`). Fast paths, exact
        because the Unicode steps do nothing to ASCII: strings of ASCII words between single
        spaces (most text) are only lowercased, other ASCII strings only collapsed and
        lowercased; the rest take every step.

        Args:
            strings: A string tensor (or anything `tf.convert_to_tensor` makes one), any rank.

        Returns:
            A string tensor of the same shape, the normalised texts.
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
        """Applies `preprocess_text`'s per-character steps, without the whitespace collapse.

        The steps are NFKD, dropping combining marks and lowercasing (when `do_lower_case`);
        applied to single characters, it says what each one becomes.

        Args:
            s: A string tensor.

        Returns:
            A string tensor of the same shape.
        """
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
        """Splits strings into piece ids (calling the tokenizer does the same).

        Args:
            strings: A string tensor (or a Python string or list), a scalar or of shape
                `[batch]`. Raw text: the in-graph preprocessing applies when `preprocess`.

        Returns:
            int32 ids: a `tf.RaggedTensor` `[batch, (pieces)]` for a `[batch]` input, a dense
            `[pieces]` tensor for a scalar.
        """
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        scalar = strings.shape.rank == 0
        if scalar:
            strings = tf.reshape(strings, [1])
        if self.preprocess:
            strings = self.preprocess_text(strings)
        if self.sample:
            ids = tf.cast(self._sp.tokenize(strings), tf.int32)
        else:  # tf-text before 2.20 aborts on a batch of over 32,767 pieces: sp_batches
            ids = tf.cast(sp_batches.fast_tokenize(self._sp, strings), tf.int32)
        ids = ids.with_row_splits_dtype(tf.int64)
        ids = self._fix_commas(ids)
        return ids[0] if scalar else ids

    __call__ = tokenize

    def detokenize(self, ids):
        """Turns piece ids back into text, as SentencePiece decodes them.

        The text is the preprocessed one (lowercased, accents stripped); the pieces of the
        comma-digit fix-up decode as SentencePiece reads them.

        Args:
            ids: int ids, ragged `[batch, (pieces)]` or dense `[pieces]`.

        Returns:
            A string tensor: `[batch]` for a batch of ids, a scalar for one sequence.
        """
        return self._sp.detokenize(ids)


def make_graph_tokenizer(spm_model_file=None, vocab_file=None, do_lower_case=True):
    """Builds the in-graph tokenizer of a SentencePiece model or a WordPiece vocabulary.

    Args:
        spm_model_file: Path of a SentencePiece model; gives a `GraphTokenizer`.
            Defaults to `None`.
        vocab_file: Path of a WordPiece vocabulary (Google's Chinese releases), used when
            `spm_model_file` is not given; gives a `GraphWordPieceTokenizer`.
            Defaults to `None`.
        do_lower_case: Whether the tokenizer lowercases. Defaults to `True`.

    Returns:
        A `GraphTokenizer` or a `GraphWordPieceTokenizer`.

    Raises:
        ValueError: when neither file is given.
    """
    if spm_model_file:
        return GraphTokenizer(str(spm_model_file), do_lower_case=do_lower_case)
    if vocab_file:
        return GraphWordPieceTokenizer(str(vocab_file), do_lower_case=do_lower_case)
    raise ValueError(
        "an in-graph tokenizer needs spm_model_file (SentencePiece) or vocab_file (WordPiece)"
    )


@keras.saving.register_keras_serializable(package="albert_tf")
class GraphTokenizerLayer(keras.layers.Layer):
    """Keras layer that tokenizes raw strings in the graph, optionally packing model features.

    Called on one string tensor (or two, a text pair), it returns the ragged int32 piece ids
    when `max_seq_length` is `None`, else the packed `[CLS] A [SEP] (B [SEP])` features: a dict
    of int32 `input_ids`, `input_mask`, `segment_ids` of shape `[batch, max_seq_length]`. It
    uses a `GraphTokenizer` for a SentencePiece model and a `GraphWordPieceTokenizer` for a
    WordPiece vocabulary.

    A `.keras` file stores the tokenizer's SentencePiece model or WordPiece vocabulary itself
    (as an asset), not its path, so the saved model loads in another folder or on another
    machine. A layer rebuilt from its config alone has no tokenizer until `load_assets` runs.

    Args:
        spm_model_file: Path of a SentencePiece model. Defaults to `None`.
        do_lower_case: Whether the tokenizer lowercases. Defaults to `True`.
        max_seq_length: int or `None`. Length of the packed features; `None` returns the
            piece ids unpacked. Defaults to `None`.
        vocab_file: Path of a WordPiece vocabulary, used when `spm_model_file` is not given.
            Defaults to `None`.
        **kwargs: Other `keras.layers.Layer` arguments, such as `name`.

    Example:

    >>> import tensorflow as tf, albert_tf
    >>> layer = albert_tf.GraphTokenizerLayer(
    ...     "tests/data/fixtures/albert_tiny/30k-clean.model", max_seq_length=8)
    >>> features = layer(tf.constant(["Hello, World!", "the cat"]))
    >>> features["input_ids"].numpy().tolist()
    [[2, 13, 397, 489, 113, 16, 248, 3], [2, 14, 13, 65, 51, 56, 3, 0]]
    >>> features["input_mask"].numpy().tolist()
    [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 0]]
    >>> ids_layer = albert_tf.GraphTokenizerLayer(
    ...     "tests/data/fixtures/albert_tiny/30k-clean.model")
    >>> ids_layer(tf.constant(["the cat"])).to_list()
    [[14, 13, 65, 51, 56]]
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
        """Whether the tokenizer is WordPiece (else SentencePiece)."""
        return isinstance(self.tokenizer, GraphWordPieceTokenizer)

    def call(self, text_a, text_b=None):
        """Tokenizes one or two string tensors, and packs them when `max_seq_length` is set.

        Args:
            text_a: A string tensor `[batch]` (a scalar gives unbatched ids when unpacked).
            text_b: The second texts of pairs, `[batch]`, or `None`. Used only when packing.
                Defaults to `None`.

        Returns:
            The ragged int32 ids `[batch, (pieces)]` of `text_a` when `max_seq_length` is
            `None`, else a dict of int32 `input_ids`, `input_mask`, `segment_ids`
            `[batch, max_seq_length]`.

        Raises:
            ValueError: when the layer has no tokenizer (built without a model file and not
                loaded from a `.keras` file).
        """
        if self.tokenizer is None:
            raise ValueError(
                f"GraphTokenizerLayer {self.name!r} has no tokenizer: pass "
                "spm_model_file or vocab_file, or load it from a .keras file"
            )
        if self.max_seq_length is None:
            return self.tokenizer.tokenize(text_a)
        return self.tokenizer.encode(text_a, text_b, self.max_seq_length)

    def compute_output_spec(self, text_a, text_b=None):
        """Describes the outputs without the tokenizer (a functional model is rebuilt before
        its assets load).

        Args:
            text_a: The symbolic input's spec (its shape is used).
            text_b: The second input's spec, or `None`. Defaults to `None`.

        Returns:
            A ragged int32 `keras.KerasTensor` `[..., (pieces)]`, or a dict of int32 ones
            `[..., max_seq_length]`.
        """
        shape = tuple(text_a.shape)
        if self.max_seq_length is None:
            return keras.KerasTensor(shape + (None,), "int32", ragged=True)
        return {
            name: keras.KerasTensor(shape + (self.max_seq_length,), "int32")
            for name in ("input_ids", "input_mask", "segment_ids")
        }

    def get_config(self):
        """Returns the constructor arguments, for Keras serialisation.

        The SentencePiece model or vocabulary is not in the config: it is saved as an asset.

        Returns:
            A dict with the Layer config, `do_lower_case` and `max_seq_length`.
        """
        config = super().get_config()
        config.update(do_lower_case=self.do_lower_case, max_seq_length=self.max_seq_length)
        return config

    def save_assets(self, dir_path):
        """Writes the SentencePiece model's bytes (or the WordPiece vocabulary) as an asset.

        Keras calls it when saving a `.keras` file.

        Args:
            dir_path: The assets folder Keras gives.

        Raises:
            ValueError: when the layer has no tokenizer to save.
        """
        if self.tokenizer is None:
            raise ValueError(f"GraphTokenizerLayer {self.name!r} has no tokenizer to save")
        if self.wordpiece:
            fileio.write_text(
                fileio.join(dir_path, self.VOCAB_ASSET_NAME), self.tokenizer.vocab_text
            )
        else:
            fileio.write_bytes(fileio.join(dir_path, self.ASSET_NAME), self.tokenizer.model_proto)

    def load_assets(self, dir_path):
        """Builds the tokenizer from the asset `save_assets` wrote.

        Keras calls it when loading a `.keras` file.

        Args:
            dir_path: The assets folder Keras gives.
        """
        vocab = fileio.join(dir_path, self.VOCAB_ASSET_NAME)
        if fileio.exists(vocab):
            self._use_model(vocab_file=vocab)
        else:
            self._use_model(fileio.join(dir_path, self.ASSET_NAME))
