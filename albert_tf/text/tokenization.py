"""Tokenization exactly as Google's ALBERT: SentencePiece (with its comma-digit quirk) or WordPiece.

SentencePiece mode reproduces what Google's `FullTokenizer(spm_model_file=...)` does,
including the effective behaviour of its digit+"," fix-up (the "▁" added by re-encoding
stays). The fast paths below give identical results: ids are encoded in C++ and mapped to
pieces through a cached table, and the fix-up runs only when a piece that needs it occurs.
WordPiece mode (Google's Chinese releases) is BERT's basic tokenizer plus greedy "##" pieces.
"""
from __future__ import annotations

import functools
import operator
import os
import re
import shutil
import tempfile
import unicodedata
from typing import Iterable, Sequence

import sentencepiece as spm

SPIECE_UNDERLINE = "\u2581"
CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac")
SAMPLE_NBEST_SIZE = 64
SAMPLE_ALPHA = 0.1

__all__ = [
    "FullTokenizer", "BasicTokenizer", "WordpieceTokenizer", "preprocess_text",
    "encode_pieces", "encode_ids", "train_sentencepiece", "load_vocab",
    "load_sentencepiece", "SPIECE_UNDERLINE",
]


# --------------------------------------------------------------------------- text tables

def _ranges_to_class(codepoints: Iterable[int]) -> str:
    """A regex character class (RE2 and Python `re` syntax) for a sorted codepoint list."""
    parts, cps = [], sorted(codepoints)
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        lo, hi = cps[i], cps[j]
        parts.append(f"\\x{{{lo:x}}}" if lo == hi else f"\\x{{{lo:x}}}-\\x{{{hi:x}}}")
        i = j + 1
    return "[" + "".join(parts) + "]"


@functools.cache
def combining_codepoints() -> tuple:
    """Codepoints Python's `unicodedata.combining` marks (the set Google's preprocess drops)."""
    return tuple(cp for cp in range(0x110000) if unicodedata.combining(chr(cp)))


@functools.cache
def whitespace_codepoints() -> tuple:
    """Codepoints `str.split()` treats as whitespace (Google's whitespace collapse)."""
    return tuple(cp for cp in range(0x110000) if chr(cp).isspace())


@functools.cache
def digit_codepoints() -> tuple:
    """Codepoints with `str.isdigit()` true (the digit test of Google's comma fix-up)."""
    return tuple(cp for cp in range(0x110000) if chr(cp).isdigit())


@functools.cache
def _combining_re():
    """Compiled Python regex matching one combining character."""
    cls = "".join(
        chr(a) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in _runs(combining_codepoints()))
    return re.compile(f"[{cls}]")


def _runs(cps: Sequence[int]):
    """Yields (first, last) of each run of consecutive codepoints."""
    start = prev = None
    for cp in cps:
        if start is None:
            start = prev = cp
        elif cp == prev + 1:
            prev = cp
        else:
            yield start, prev
            start = prev = cp
    if start is not None:
        yield start, prev


# --------------------------------------------------------------------------- preprocessing

def convert_to_unicode(text) -> str:
    """str as is; bytes decoded as UTF-8 (invalid bytes dropped, as Google's helper does)."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise TypeError(f"expected str or bytes, got {type(text).__name__}")


def preprocess_text(inputs, remove_space=True, lower=False) -> str:
    """Google's ALBERT normalisation: collapse whitespace, NFKD, drop combining marks, lower.

    Accents are always stripped; there is no quote rewriting. ASCII text skips the
    Unicode steps, which are the identity on it.
    """
    outputs = convert_to_unicode(inputs)
    if remove_space:
        outputs = " ".join(outputs.split())
    if not outputs.isascii():
        if not unicodedata.is_normalized("NFKD", outputs):
            outputs = unicodedata.normalize("NFKD", outputs)
        outputs = _combining_re().sub("", outputs)
    if lower:
        outputs = outputs.lower()
    return outputs


# --------------------------------------------------------------------------- SentencePiece

def _needs_comma_fix(piece: str) -> bool:
    """Google's test: a piece longer than one character ending in a digit then ","."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def _reencode(sp, piece: str) -> list:
    """Google's effective fix-up of one piece: re-encode it without ',' and '▁', keep the
    '▁' the re-encoding adds (Google's branch to drop it never runs), then ','."""
    return list(sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)) + [piece[-1]]


class _SpInfo:
    """Per-model caches: id→piece list, piece→id dict, and the comma fix-up tables."""

    def __init__(self, sp):
        self.sp = sp
        n = sp.get_piece_size()
        self.pieces = [sp.id_to_piece(i) for i in range(n)]
        self.vocab = {p: i for i, p in enumerate(self.pieces)}
        self.unk_id = sp.unk_id()
        self.fix_pieces = {p: _reencode(sp, p) for p in self.pieces if _needs_comma_fix(p)}
        self.fix_ids = {self.vocab[p]: [self.vocab.get(q, self.unk_id) for q in rep]
                        for p, rep in self.fix_pieces.items()}
        # With "," a known piece no unknown piece (a run of unknown characters) can end in
        # ",", so only vocabulary pieces can need the fix-up; otherwise check every piece.
        self.generic = "," not in self.vocab
        self._getter = operator.itemgetter

    def ids_to_pieces(self, ids) -> list:
        """Pieces of known ids through the cached table."""
        if len(ids) == 1:
            return [self.pieces[ids[0]]]
        return list(self._getter(*ids)(self.pieces)) if ids else []


_SP_INFOS: dict = {}


def _info(sp) -> _SpInfo:
    """The cached _SpInfo of a SentencePieceProcessor (built once per processor)."""
    entry = _SP_INFOS.get(id(sp))
    if entry is None or entry.sp is not sp:
        entry = _SP_INFOS[id(sp)] = _SpInfo(sp)
    return entry


def _fix_pieces(info: _SpInfo, pieces: list) -> list:
    """Applies the comma fix-up to a piece list, only where a piece needs it."""
    if info.generic:
        if not any(_needs_comma_fix(p) for p in pieces):
            return pieces
        out = []
        for p in pieces:
            if _needs_comma_fix(p):
                out.extend(info.fix_pieces.get(p) or _reencode(info.sp, p))
            else:
                out.append(p)
        return out
    return _expand(pieces, info.fix_pieces)


def _fix_ids(info: _SpInfo, ids: list) -> list:
    """The comma fix-up on ids of known pieces (caller ensures no unknown pieces)."""
    return _expand(ids, info.fix_ids)


def _expand(items: list, table: dict) -> list:
    """Each item replaced by its table entry (a list) where it has one; the input itself when
    no item has one."""
    if not table or table.keys().isdisjoint(items):
        return items
    out = []
    for item in items:
        rep = table.get(item)
        if rep is None:
            out.append(item)
        else:
            out.extend(rep)
    return out


def _raw_pieces(sp, text: str, sample: bool) -> list:
    """SentencePiece's pieces (surface text for unknown pieces), optionally sampled."""
    if sample:
        return sp.encode(text, out_type=str, enable_sampling=True,
                         nbest_size=SAMPLE_NBEST_SIZE, alpha=SAMPLE_ALPHA)
    return sp.encode(text, out_type=str)


def encode_pieces(sp_model, text, return_unicode=True, sample=False) -> list:
    """Google's encode_pieces: SentencePiece pieces plus its digit+',' fix-up (▁ kept).

    `return_unicode` is accepted for API compatibility; pieces are always str.
    """
    del return_unicode
    text = convert_to_unicode(text)
    info = _info(sp_model)
    if not sample and not info.generic:
        ids = sp_model.encode(text)
        if info.unk_id not in ids:
            return _fix_pieces(info, info.ids_to_pieces(ids))
    return _fix_pieces(info, _raw_pieces(sp_model, text, sample))


def encode_ids(sp_model, text, sample=False) -> list:
    """Google's encode_ids: PieceToId over encode_pieces (unknown pieces → unk id)."""
    text = convert_to_unicode(text)
    info = _info(sp_model)
    if not sample and not info.generic:
        ids = sp_model.encode(text)
        if info.unk_id not in ids:
            return _fix_ids(info, ids)
    vocab, unk = info.vocab, info.unk_id
    return [vocab.get(p, unk) for p in encode_pieces(sp_model, text, sample=sample)]


def _read_bytes(path: str) -> bytes:
    """File bytes; remote paths (gs://...) through tf.io.gfile, local ones directly."""
    if "://" in str(path):
        import tensorflow as tf
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"file not found: {path}")
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"file not found: {path}")
    with open(path, "rb") as f:
        return f.read()


def _describe_text_file(data: bytes) -> str | None:
    """If data is a text vocabulary, says which kind (for a clear error), else None."""
    try:
        text = data[:65536].decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines:
        return "an empty or whitespace-only text file"
    if all("\t" in l for l in lines[:50]):
        return "a SentencePiece .vocab text file (pass the .model file next to it)"
    if any(l.strip() in ("[PAD]", "[UNK]", "[CLS]") for l in lines[:1000]):
        return "a WordPiece vocabulary text file (pass it as vocab_file=, not spm_model_file=)"
    return "a text file, not a SentencePiece model"


def load_sentencepiece(path: str):
    """Loads a SentencePiece model with one-line errors for missing, text or corrupt files."""
    data = _read_bytes(path)
    kind = _describe_text_file(data)
    if kind is not None:
        raise ValueError(f"{path} is {kind}")
    try:
        return spm.SentencePieceProcessor(model_proto=data)
    except (RuntimeError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{path} is not a valid SentencePiece model (corrupt or truncated): "
                         f"{first}") from None


# --------------------------------------------------------------------------- WordPiece

def load_vocab(vocab_file: str) -> dict:
    """A WordPiece vocabulary: the first field of each non-empty line, id = order of first
    appearance (also reads SentencePiece .vocab files, whose lines are 'piece<TAB>score')."""
    text = _read_bytes(vocab_file).decode("utf-8", "ignore")
    vocab: dict = {}
    for line in text.splitlines():
        token = line.strip().split()[0] if line.strip() else None
        if token is not None and token not in vocab:
            vocab[token] = len(vocab)
    return vocab


def _is_whitespace(ch: str) -> bool:
    """BERT's whitespace: space, tab, newline, carriage return or category Zs."""
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    """BERT's control characters: categories Cc/Cf, except tab, newline, carriage return."""
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def _is_punctuation(ch: str) -> bool:
    """BERT's punctuation: all non-alphanumeric printable ASCII, or a Unicode P* category."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_cjk(cp: int) -> bool:
    """CJK Unified Ideographs blocks (BERT's definition of a Chinese character)."""
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


class BasicTokenizer:
    """BERT's basic tokenizer: cleanup, CJK splitting, lowercase + accent strip, punctuation."""

    def __init__(self, do_lower_case: bool = True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text) -> list:
        """Splits text into words and punctuation marks."""
        text = self._clean_text(convert_to_unicode(text))
        text = self._space_cjk(text)
        out = []
        for token in text.split():
            if self.do_lower_case:
                token = self._strip_accents(token.lower())
            out.extend(self._split_on_punc(token))
        return " ".join(out).split()

    @staticmethod
    def _clean_text(text: str) -> str:
        """Drops NUL, U+FFFD and control characters; maps whitespace to a space."""
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            out.append(" " if _is_whitespace(ch) else ch)
        return "".join(out)

    @staticmethod
    def _space_cjk(text: str) -> str:
        """Surrounds each CJK ideograph with spaces so that each is its own word."""
        return "".join(f" {ch} " if _is_cjk(ord(ch)) else ch for ch in text)

    @staticmethod
    def _strip_accents(text: str) -> str:
        """NFD, then drops nonspacing marks (category Mn)."""
        text = unicodedata.normalize("NFD", text)
        return "".join(ch for ch in text if unicodedata.category(ch) != "Mn")

    @staticmethod
    def _split_on_punc(text: str) -> list:
        """Splits a word so that each punctuation character is its own token."""
        out, cur = [], []
        for ch in text:
            if _is_punctuation(ch):
                if cur:
                    out.append("".join(cur))
                    cur = []
                out.append(ch)
            else:
                cur.append(ch)
        if cur:
            out.append("".join(cur))
        return out


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece with '##' continuations and a word-length cap."""

    def __init__(self, vocab: dict, unk_token: str = "[UNK]", max_input_chars_per_word: int = 200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word

    def tokenize(self, text) -> list:
        """WordPiece pieces of whitespace-separated words; a word that cannot be covered, or
        longer than the cap, becomes one unk token."""
        out = []
        for word in convert_to_unicode(text).split():
            out.extend(self._word_pieces(word))
        return out

    def _word_pieces(self, word: str) -> list:
        """Pieces of one word, or [unk_token]."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in self.vocab:
                    break
                end -= 1
            if end == start:
                return [self.unk_token]
            pieces.append(sub)
            start = end
        return pieces


# --------------------------------------------------------------------------- FullTokenizer

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
            self._sp = _info(self.sp_model)
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
            raise ValueError("FullTokenizer needs spm_model_file= (SentencePiece) "
                             "or vocab_file= (WordPiece)")
        missing = [s for s in CONTROL_SYMBOLS if s not in self.vocab]
        if missing:
            raise ValueError(f"{source} lacks the special tokens {' '.join(missing)} "
                             "that ALBERT needs")

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
                out.append(_fix_pieces(info, self.sp_model.encode(text, out_type=str)))
            else:
                out.append(_fix_pieces(info, info.ids_to_pieces(ids)))
        return out

    def encode_batch(self, texts: Sequence) -> list:
        """encode over many texts, in one SentencePiece batch call."""
        if self.sp_model is None or self._sp.generic:
            return [self.encode(t) for t in texts]
        info, unk = self._sp, self._unk_id
        texts = [convert_to_unicode(t) for t in texts]
        out = []
        for text, ids in zip(texts, self.sp_model.encode(texts)):
            out.append(_fix_ids(info, ids) if unk not in ids else encode_ids(self.sp_model, text))
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


# --------------------------------------------------------------------------- training

def train_sentencepiece(input_files, model_prefix, vocab_size, *, model_type="unigram",
                        character_coverage=0.99995, input_sentence_size=10_000_000,
                        shuffle_input_sentence=True, num_threads=None,
                        control_symbols=CONTROL_SYMBOLS,
                        user_defined_symbols=USER_DEFINED_SYMBOLS, quiet=True, **extra) -> str:
    """Trains a SentencePiece model with Google's ALBERT recipe; returns the .model path.

    Unigram, pad 0 <pad>, unk 1 <unk>, no bos/eos, control symbols [CLS] [SEP] [MASK]
    (ids 2-4), user symbols ( ) " - . – £ €, coverage 0.99995. Trains into a temporary
    prefix and renames, so `<prefix>.model` / `.vocab` appear only when complete.
    """
    if isinstance(input_files, (str, os.PathLike)):
        input_files = [input_files]
    input_files = [str(p) for p in input_files]
    for path in input_files:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"training input not found: {path}")
    model_prefix = os.path.abspath(str(model_prefix))
    out_dir = os.path.dirname(model_prefix)
    os.makedirs(out_dir, exist_ok=True)
    tmp_dir = tempfile.mkdtemp(prefix=".spm_train_", dir=out_dir)
    try:
        tmp_prefix = os.path.join(tmp_dir, "spm")
        options = dict(
            input=input_files, model_prefix=tmp_prefix, vocab_size=int(vocab_size),
            model_type=model_type, character_coverage=character_coverage,
            input_sentence_size=input_sentence_size,
            shuffle_input_sentence=shuffle_input_sentence,
            pad_id=0, pad_piece="<pad>", unk_id=1, unk_piece="<unk>", bos_id=-1, eos_id=-1,
            control_symbols=list(control_symbols),
            user_defined_symbols=list(user_defined_symbols),
            num_threads=num_threads or os.cpu_count() or 1)
        if quiet:
            options["minloglevel"] = 2
        options.update(extra)
        spm.SentencePieceTrainer.train(**options)
        os.replace(tmp_prefix + ".vocab", model_prefix + ".vocab")
        os.replace(tmp_prefix + ".model", model_prefix + ".model")
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return model_prefix + ".model"
