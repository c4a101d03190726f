"""BERT's WordPiece tokenization (basic tokenizer + greedy "##" pieces), used by Google's
Chinese ALBERT releases instead of SentencePiece."""

from __future__ import annotations

import functools
import unicodedata

from albert_tf.text.normalization import convert_to_unicode


def is_whitespace(ch: str) -> bool:
    """BERT's whitespace: space, tab, newline, carriage return or category Zs."""
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_control(ch: str) -> bool:
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


_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(cp: int) -> bool:
    """CJK Unified Ideographs blocks (BERT's definition of a Chinese character)."""
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


@functools.cache
def bert_codepoints(kind: str) -> tuple:
    """Codepoints of BERT's BasicTokenizer classes (Google's tokenization.py, by Python's
    unicodedata): "control" (dropped), "whitespace" (→ " "), "punctuation" (a token each),
    "cjk" (a token each), "nonspacing" (category Mn, dropped after NFD when lowercasing)."""
    test = {
        "control": lambda ch: ch in "\x00\ufffd" or is_control(ch),
        "whitespace": is_whitespace,
        "punctuation": _is_punctuation,
        "cjk": lambda ch: _is_cjk(ord(ch)),
        "nonspacing": lambda ch: unicodedata.category(ch) == "Mn",
    }[kind]
    return tuple(cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and test(chr(cp)))


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
            if cp == 0 or cp == 0xFFFD or is_control(ch):
                continue
            out.append(" " if is_whitespace(ch) else ch)
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
