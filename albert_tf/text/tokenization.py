"""Tokenization exactly as Google's ALBERT: SentencePiece (with its comma-digit quirk) or WordPiece.

`FullTokenizer` is Google's tokenizer class; the pieces it is built from live in their own
modules (`normalization.preprocess_text`, `spm_encode`, `spm_train`, `wordpiece`). SentencePiece
mode
reproduces what Google's `FullTokenizer(spm_model_file=...)` does, including the effective
behaviour of its digit+"," fix-up (`spm_encode`). WordPiece mode (Google's Chinese releases) is
BERT's basic tokenizer plus greedy "##" pieces (`wordpiece`).
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
    """Google's FullTokenizer: SentencePiece when spm_model_file is given, else WordPiece.

    SentencePiece mode does not normalise in `tokenize` (as Google's); call
    `preprocess_text(text, lower=...)` (or `self.preprocess`) first.
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
        """Id of the unknown piece (<unk> or [UNK])."""
        if self._unk_id is None:
            raise ValueError("this vocabulary has no unknown token ([UNK] / <unk>)")
        return self._unk_id

    @property
    def pad_id(self) -> int:
        """Id of the padding piece (<pad> or [PAD])."""
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
        """preprocess_text with this tokenizer's do_lower_case (SentencePiece mode)."""
        return preprocess_text(text, lower=self.do_lower_case)

    def tokenize(self, text, sample=False) -> list:
        """Pieces of text (SentencePiece: encode_pieces, no normalisation; else WordPiece)."""
        if self.sp_model is not None:
            return encode_pieces(self.sp_model, text, sample=sample)
        out = []
        for token in self.basic_tokenizer.tokenize(text):
            out.extend(self.wordpiece_tokenizer.tokenize(token))
        return out

    def encode(self, text, sample=False) -> list:
        """Ids of tokenize(text), faster than convert_tokens_to_ids(tokenize(text))."""
        if self.sp_model is not None:
            return encode_ids(self.sp_model, text, sample=sample)
        return self.convert_tokens_to_ids(self.tokenize(text))

    def tokenize_batch(self, texts: Sequence) -> list:
        """tokenize over many texts, encoding them in one SentencePiece batch call."""
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
        """encode over many texts, in one SentencePiece batch call."""
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
        """Ids of pieces; pieces not in the vocabulary map to the unk id."""
        return list(map(self.vocab.get, tokens, _repeat(self._unk_id, len(tokens))))

    def convert_ids_to_tokens(self, ids) -> list:
        """Pieces of ids (KeyError on an id outside the vocabulary)."""
        inv = self.inv_vocab
        return [inv[int(i)] for i in ids]


def _repeat(value, n):
    """n copies of value, as an iterable for map()."""
    return [value] * n
