"""WordPiece tokenization inside the TensorFlow graph, for Google's Chinese ALBERT releases
(`vocab_chinese.txt`, no SentencePiece model): the ids of Google's Python
`FullTokenizer(vocab_file=...)` (BERT's BasicTokenizer + WordPiece), from raw strings.

BERT's basic tokenizer is rebuilt from its own character classes, read off Python's
`unicodedata` as Google's code reads them (tf-text's BertTokenizer case-folds with NFKC, which
maps full-width letters to ASCII where Python's `str.lower` keeps them full-width, and its
punctuation class follows RE2's Unicode version): drop control characters, map whitespace to
spaces, lowercase, NFD and drop nonspacing marks, then split on spaces, punctuation and CJK
ideographs with tf-text's `regex_split_with_offsets`; the words go to tf-text's
`FastWordpieceTokenizer` (greedy longest-match-first, as BERT's). Offsets of every piece in the
original string come with `tokenize_with_offsets` (SQuAD answers).
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf.text import codepoints
from albert_tf.text.graph_text import PackingMixin, python_lower, python_normalize
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.text.wordpiece import bert_codepoints

__all__ = ["GraphWordPieceTokenizer"]

MAX_WORD_CHARS = 200  # BERT's max_input_chars_per_word: a longer word is one [UNK]


def _class(kind: str) -> str:
    return codepoints.ranges_to_class(bert_codepoints(kind))


class GraphWordPieceTokenizer(PackingMixin, tf.Module):
    """Raw strings → ragged int32 ids, as Google's FullTokenizer(vocab_file).tokenize.

    >>> import tempfile, os
    >>> vocab = os.path.join(tempfile.mkdtemp(), "vocab.txt")
    >>> words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "中", "文", "hello", "##s", "!"]
    >>> _ = open(vocab, "w").write("\\n".join(words) + "\\n")
    >>> tok = GraphWordPieceTokenizer(vocab)
    >>> tok.tokenize(["Hellos 中文!"]).to_list()
    [[7, 8, 5, 6, 9]]
    """

    def __init__(self, vocab_file, do_lower_case=True, name=None):
        super().__init__(name=name)
        py = FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
        self.do_lower_case = bool(do_lower_case)
        self.vocab_size = py.vocab_size
        self.pad_id, self.unk_id = py.pad_id, py.unk_id
        self.cls_id, self.sep_id, self.mask_id = py.cls_id, py.sep_id, py.mask_id
        tokens = [py.inv_vocab[i] for i in range(py.vocab_size)]
        # the vocabulary's text, for saving with a model (a .keras file's asset)
        self.vocab_text = "".join(t + "\n" for t in tokens)
        self._piece_chars = tf.constant([len(t) - 2 * t.startswith("##") for t in tokens], tf.int64)
        unk = py.inv_vocab[py.unk_id]
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=tokens,
            suffix_indicator="##",
            unknown_token=unk,
            no_pretokenization=True,
            max_bytes_per_word=4 * MAX_WORD_CHARS,
            token_out_type=tf.int64,
        )
        self._drop_re = _class("control")
        self._space_re = _class("whitespace")
        self._mn_re = _class("nonspacing")
        keep = f"{_class('punctuation')}|{_class('cjk')}"
        # str.split()'s whitespace too: U+2028/2029 are neither BERT whitespace nor control
        spaces = codepoints.ranges_to_class(codepoints.whitespace_codepoints())
        self._split_re, self._keep_re = f"{spaces}+|{keep}", keep
        self._lower = python_lower()
        self._nfd = python_normalize("NFD")

    def normalize(self, strings):
        """BERT's per-character steps on a [batch] string tensor: invalid UTF-8, NUL, U+FFFD and
        control characters dropped, whitespace → " ", and with do_lower_case lower, NFD and
        nonspacing marks dropped."""
        s = tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="ignore")
        s = tf.strings.regex_replace(s, self._drop_re, "")
        s = tf.strings.regex_replace(s, self._space_re, " ")
        if self.do_lower_case:
            s = tf.strings.regex_replace(self._nfd(self._lower(s)), self._mn_re, "")
        return s

    def words(self, strings):
        """BERT's basic tokens of a [batch] string tensor: ragged [batch, (words)]."""
        return tf_text.regex_split(self.normalize(strings), self._split_re, self._keep_re)

    def tokenize(self, strings):
        """Ids of a string tensor: [batch] → ragged [batch, (pieces)]; a scalar → [pieces]."""
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        scalar = strings.shape.rank == 0
        ids, _ = self.tokenize_with_counts(tf.reshape(strings, [-1]))
        return ids[0] if scalar else ids

    def tokenize_with_counts(self, strings):
        """[batch] strings → (ids, counts), ragged [batch, (pieces)]: counts are the normalised
        characters each piece covers (its length without "##"; an unknown word's length), what
        SQuAD's offsets need (tasks/squad/graph_offsets.py)."""
        words = self.words(strings)
        pieces = self._word_pieces(words.flat_values)
        ids = words.with_flat_values(pieces).merge_dims(1, 2)
        unk = tf.equal(pieces.flat_values, self.unk_id)
        word_len = tf.repeat(
            tf.strings.length(words.flat_values, unit="UTF8_CHAR"), pieces.row_lengths()
        )
        counts = tf.where(
            unk, tf.cast(word_len, tf.int64), tf.gather(self._piece_chars, pieces.flat_values)
        )
        return (
            tf.cast(ids, tf.int32).with_row_splits_dtype(tf.int64),
            ids.with_flat_values(counts).with_row_splits_dtype(tf.int64),
        )

    __call__ = tokenize

    def _word_pieces(self, words):
        """[words] → ragged [words, (pieces)] int64; a word over MAX_WORD_CHARS characters is
        one unknown piece, as in BERT (tf-text's limit counts bytes)."""
        pieces = self._wordpiece.tokenize(words)
        long = tf.strings.length(words, unit="UTF8_CHAR") > MAX_WORD_CHARS
        keep = tf.repeat(~long, pieces.row_lengths())
        kept = tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(pieces.values, keep),
            tf.where(long, tf.zeros_like(pieces.row_lengths()), pieces.row_lengths()),
        )
        unk = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(tf.cast(long, tf.int64))], tf.constant(self.unk_id, tf.int64)),
            tf.cast(long, tf.int64),
        )
        return tf.concat([kept, unk], axis=1)
