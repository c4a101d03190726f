"""Tokenization exactly as Google's ALBERT does it: SentencePiece or WordPiece.

`FullTokenizer` is Google's tokenizer class; the parts it is built from live in their own
modules (`normalization.preprocess_text`, `spm_encode`, `spm_train`, `wordpiece`). SentencePiece
mode reproduces what Google's `FullTokenizer(spm_model_file=...)` does, including the effective
behaviour of its fix-up of pieces that end in a digit followed by "," (`spm_encode`). WordPiece
mode (Google's Chinese releases) is BERT's basic tokenizer followed by greedy "##" pieces
(`wordpiece`).
"""

from __future__ import annotations

from typing import Sequence

from albert_tf.text.normalization import convert_to_unicode, preprocess_text
from albert_tf.text.spm_encode import (
    encode_ids,
    encode_pieces,
    fix_comma_ids,
    fix_comma_pieces,
    model_tables,
)
from albert_tf.text.spm_train import CONTROL_SYMBOLS
from albert_tf.text.vocab_files import load_sentencepiece, load_vocab
from albert_tf.text.wordpiece import BasicTokenizer, WordpieceTokenizer


class FullTokenizer:
    """Google's ALBERT tokenizer: text to pieces and ids, with SentencePiece or WordPiece.

    With `spm_model_file` (Google's English releases, `30k-clean.model`) it uses SentencePiece
    and gives the pieces Google's `FullTokenizer` gives, including its comma-digit fix-up
    ("1,000" is split as Google splits it). With only `vocab_file` (Google's Chinese releases)
    it uses BERT's basic tokenizer and greedy "##" WordPiece.

    In SentencePiece mode `tokenize` does not normalise the text, exactly like Google's: call
    `preprocess(text)` (or `albert_tf.preprocess_text(text, lower=...)`) first. In WordPiece
    mode `tokenize` lowercases and splits punctuation itself.

    Special ids (`cls_id`, `sep_id`, `mask_id`, `pad_id`, `unk_id`) and `vocab_size` are read
    from the model or vocabulary.

    Args:
        vocab_file: Path of a WordPiece vocabulary (one token a line). Used only when
            `spm_model_file` is not given. Defaults to `None`.
        do_lower_case: Whether text is lowercased: by `preprocess` in SentencePiece mode, by
            `tokenize` in WordPiece mode. Defaults to `True`.
        spm_model_file: Path of a SentencePiece model; when given, `vocab_file` is ignored.
            Defaults to `None`.

    Raises:
        ValueError: when neither `spm_model_file` nor `vocab_file` is given, or when the
            model or vocabulary lacks one of the special tokens `[CLS]`, `[SEP]`, `[MASK]`.

    Example:

    >>> import albert_tf
    >>> tokenizer = albert_tf.FullTokenizer(
    ...     spm_model_file="tests/data/fixtures/albert_tiny/30k-clean.model")
    >>> text = tokenizer.preprocess("Héllo,   World!")
    >>> text
    'hello, world!'
    >>> tokenizer.tokenize(text)
    ['▁', 'h', 'ell', 'o', ',', '▁w', 'or', 'ld', '!']
    >>> tokenizer.encode(text)
    [13, 397, 489, 113, 16, 248, 109, 338, 588]
    >>> tokenizer.convert_ids_to_tokens([2, 3, 4])
    ['[CLS]', '[SEP]', '[MASK]']
    >>> tokenizer.vocab_size, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
    (1000, 2, 3, 0)
    """

    def __init__(self, vocab_file=None, do_lower_case=True, spm_model_file=None):
        self.do_lower_case = do_lower_case
        self.sp_model = None
        if spm_model_file:
            self.spm_model_file = str(spm_model_file)
            self.sp_model = load_sentencepiece(self.spm_model_file)
            self._sp = model_tables(self.sp_model)
            self.vocab = self._sp.vocab
            self.inv_vocab = dict(enumerate(self._sp.pieces))
            self._unk_id = self.sp_model.unk_id()
            source = self.spm_model_file
        elif vocab_file:
            self.vocab = load_vocab(str(vocab_file))
            self.inv_vocab = {i: t for t, i in self.vocab.items()}
            self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
            self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
            self._unk_id = self.vocab.get("[UNK]", self.vocab.get("<unk>"))
            source = str(vocab_file)
        else:
            raise ValueError(
                "FullTokenizer needs spm_model_file= (SentencePiece) or vocab_file= (WordPiece)"
            )
        missing = [s for s in CONTROL_SYMBOLS if s not in self.vocab]
        if missing:
            raise ValueError(
                f"{source} lacks the special tokens {' '.join(missing)} that ALBERT needs"
            )

    # ----- special ids (read from the model / vocabulary)

    @property
    def cls_id(self) -> int:
        """Id of [CLS]."""
        return self.vocab["[CLS]"]

    @property
    def sep_id(self) -> int:
        """Id of [SEP]."""
        return self.vocab["[SEP]"]

    @property
    def mask_id(self) -> int:
        """Id of [MASK]."""
        return self.vocab["[MASK]"]

    @property
    def unk_id(self) -> int:
        """Id of the unknown piece (`<unk>` or `[UNK]`).

        Raises:
            ValueError: when the vocabulary has no unknown token.
        """
        if self._unk_id is None:
            raise ValueError("this vocabulary has no unknown token ([UNK] / <unk>)")
        return self._unk_id

    @property
    def pad_id(self) -> int:
        """Id of the padding piece (`<pad>` or `[PAD]`).

        Raises:
            ValueError: when the vocabulary has no padding token.
        """
        if self.sp_model is not None and self.sp_model.pad_id() >= 0:
            return self.sp_model.pad_id()
        for tok in ("<pad>", "[PAD]"):
            if tok in self.vocab:
                return self.vocab[tok]
        raise ValueError("this vocabulary has no padding token (<pad> / [PAD])")

    @property
    def vocab_size(self) -> int:
        """Number of pieces."""
        return len(self.vocab)

    # ----- tokenization

    def preprocess(self, text) -> str:
        """Normalises text as Google does before SentencePiece, with this `do_lower_case`.

        Args:
            text: The raw text, `str` or UTF-8 `bytes`.

        Returns:
            `preprocess_text(text, lower=self.do_lower_case)`, a `str`.
        """
        return preprocess_text(text, lower=self.do_lower_case)

    def tokenize(self, text, sample=False) -> list:
        """Splits text into pieces.

        SentencePiece mode does not normalise: pass `preprocess(text)`. WordPiece mode runs
        BERT's basic tokenizer (lowercasing when `do_lower_case`) and then WordPiece.

        Args:
            text: The text, `str` or UTF-8 `bytes`.
            sample: SentencePiece mode only: sample a segmentation (subword regularisation,
                nbest 64, alpha 0.1) instead of taking the best one. Defaults to `False`.

        Returns:
            A list of piece strings.
        """
        if self.sp_model is not None:
            return encode_pieces(self.sp_model, text, sample=sample)
        out = []
        for token in self.basic_tokenizer.tokenize(text):
            out.extend(self.wordpiece_tokenizer.tokenize(token))
        return out

    def encode(self, text, sample=False) -> list:
        """Splits text into piece ids; faster than `convert_tokens_to_ids(tokenize(text))`.

        Args:
            text: The text, `str` or UTF-8 `bytes` (not normalised in SentencePiece mode).
            sample: SentencePiece mode only: sample a segmentation instead of taking the best
                one. Defaults to `False`.

        Returns:
            A list of int ids, the ids of `tokenize(text, sample)`.
        """
        if self.sp_model is not None:
            return encode_ids(self.sp_model, text, sample=sample)
        return self.convert_tokens_to_ids(self.tokenize(text))

    def tokenize_batch(self, texts: Sequence) -> list:
        """Splits many texts into pieces, with one batched SentencePiece call.

        Args:
            texts: A sequence of texts (`str` or UTF-8 `bytes`), not normalised.

        Returns:
            A list with `tokenize(text)` for each text.
        """
        if self.sp_model is None or self._sp.generic:
            return [self.tokenize(t) for t in texts]
        info, unk = self._sp, self._unk_id
        texts = [convert_to_unicode(t) for t in texts]
        out = []
        for text, ids in zip(texts, self.sp_model.encode(texts)):
            if unk in ids:
                out.append(fix_comma_pieces(info, self.sp_model.encode(text, out_type=str)))
            else:
                out.append(fix_comma_pieces(info, info.ids_to_pieces(ids)))
        return out

    def encode_batch(self, texts: Sequence) -> list:
        """Splits many texts into piece ids, with one batched SentencePiece call.

        Args:
            texts: A sequence of texts (`str` or UTF-8 `bytes`), not normalised.

        Returns:
            A list with `encode(text)` for each text.
        """
        if self.sp_model is None or self._sp.generic:
            return [self.encode(t) for t in texts]
        info, unk = self._sp, self._unk_id
        texts = [convert_to_unicode(t) for t in texts]
        out = []
        for text, ids in zip(texts, self.sp_model.encode(texts)):
            out.append(
                fix_comma_ids(info, ids) if unk not in ids else encode_ids(self.sp_model, text)
            )
        return out

    def convert_tokens_to_ids(self, tokens) -> list:
        """Maps pieces to ids.

        Args:
            tokens: A sequence of piece strings.

        Returns:
            A list of int ids; a piece not in the vocabulary maps to the unknown id.
        """
        return list(map(self.vocab.get, tokens, _repeat(self._unk_id, len(tokens))))

    def convert_ids_to_tokens(self, ids) -> list:
        """Maps ids back to pieces.

        Args:
            ids: A sequence of ints (Python or NumPy).

        Returns:
            A list of piece strings.

        Raises:
            KeyError: when an id is outside the vocabulary.
        """
        inv = self.inv_vocab
        return [inv[int(i)] for i in ids]


def _repeat(value, n):
    """n copies of value, as an iterable for map()."""
    return [value] * n
