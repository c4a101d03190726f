"""Exact alignment of a paragraph's SentencePiece pieces to its original characters, replacing
Google's banded LCS so answers map to pieces (and back) without loss.

``preprocess_text`` is applied character by character while recording, for each output
character, the original character it came from (whitespace runs collapse to one space,
leading/trailing whitespace goes, NFKD may expand a character, combining marks are dropped and
stay attached to the character before them, and lowercasing may change length). The pieces'
text ("▁" → " ", concatenated) is then matched to that text ignoring spaces (the pieces add or
drop spaces only). These are normally identical, giving a 1:1 map; when SentencePiece's own
normaliser changed characters (Hangul re-composition, dropped zero-width characters, ...) a
``difflib`` alignment of the two strings is used instead (``ParagraphTokens.exact`` False)
and ``ParagraphTokens.coverage`` says how much of the piece text matched.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import List, Optional, Sequence, Tuple
import unicodedata

from albert_tf.text import wordpiece
from albert_tf.text.normalization import preprocess_text
from albert_tf.text.spm_encode import encode_pieces


def preprocess_with_offsets(text: str, lower: bool = True):
    """``preprocess_text(text, lower=lower)`` char by char: (output, source index per char).

    Mirrors Google's order: collapse/strip whitespace, NFKD, drop combining marks, lowercase.
    """
    out: List[str] = []
    src: List[int] = []
    begin, end = 0, len(text)
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    prev_space = False
    for i in range(begin, end):
        ch = text[i]
        if ch.isspace():
            if not prev_space:
                out.append(" ")
                src.append(i)
            prev_space = True
            continue
        prev_space = False
        for c in unicodedata.normalize("NFKD", ch):
            if unicodedata.combining(c):
                continue
            for low in c.lower() if lower else c:
                out.append(low)
                src.append(i)
    return "".join(out), src


def _char_ends(text: str, pre_src: Sequence[int]) -> List[int]:
    """Exclusive end of each original char, extended over the non-space chars after it that
    preprocessing drops (combining marks), so "é" written as e + U+0301 stays whole."""
    keeps = [False] * len(text)
    for j in pre_src:
        keeps[j] = True
    ends = [i + 1 for i in range(len(text))]
    for i in range(len(text) - 2, -1, -1):
        nxt = i + 1
        if not keeps[nxt] and not text[nxt].isspace():
            ends[i] = ends[nxt]
    return ends


def _same_text(a: str, b: str) -> bool:
    """Whether two strings differ only by Unicode normalisation or case (Hangul jamo vs
    syllables, final sigma), so a replaced block still counts as aligned."""

    def canon(text):
        return unicodedata.normalize("NFKC", text).casefold()

    return canon(a) == canon(b)


def _align_chars(src: str, dst: str):
    """For each char of ``dst``, the [lo, hi) span of ``src`` it matches; plus the matched
    fraction of ``dst``. Identical strings map 1:1; otherwise a difflib alignment."""
    if src == dst:
        return [(i, i + 1) for i in range(len(dst))], 1.0, True
    spans: List[Tuple[int, int]] = [(0, 0)] * len(dst)
    matched = 0
    matcher = difflib.SequenceMatcher(None, src, dst, autojunk=False)
    for tag, s1, s2, d1, d2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(d2 - d1):
                spans[d1 + k] = (s1 + k, s1 + k + 1)
            matched += d2 - d1
        elif tag == "replace":  # share the source block out in order
            n_src, n_dst = s2 - s1, d2 - d1
            if _same_text(src[s1:s2], dst[d1:d2]):
                matched += n_dst
            for k in range(n_dst):
                lo = s1 + (k * n_src) // n_dst
                hi = max(s1 + ((k + 1) * n_src) // n_dst, lo + 1)
                spans[d1 + k] = (lo, min(hi, s2))
        elif tag == "insert":  # dst chars with no source: empty span at s1
            for k in range(d1, d2):
                spans[k] = (s1, s1)
    return spans, (matched / len(dst) if dst else 1.0), False


@dataclasses.dataclass(frozen=True)
class ParagraphTokens:
    """A tokenized paragraph: pieces, ids and each piece's [start, end) in the original text.

    A piece of only "▁" covers no character: its start is the next piece's start and its end
    the previous piece's end, so spans beginning or ending on it still slice correctly.
    """

    paragraph_text: str
    pieces: Tuple[str, ...]
    ids: Tuple[int, ...]
    starts: Tuple[int, ...]
    ends: Tuple[int, ...]
    exact: bool
    coverage: float

    def __len__(self):
        return len(self.pieces)

    def text(self, first: int, last: int) -> str:
        """Original paragraph text of pieces first..last (inclusive), outer spaces stripped."""
        start, end = self.starts[first], self.ends[last]
        return self.paragraph_text[start:end].strip() if end > start else ""

    def char_span_to_tokens(self, start_char: int, end_char: int) -> Optional[Tuple[int, int]]:
        """(first, last) pieces covering original chars [start_char, end_char), or None."""
        real = [
            t
            for t in range(len(self.pieces))
            if self.ends[t] > self.starts[t]
            and self.ends[t] > start_char
            and self.starts[t] < end_char
        ]
        return (real[0], real[-1]) if real else None


def tokenize_paragraph(paragraph: str, tokenizer, do_lower_case: bool = True) -> ParagraphTokens:
    """Google's paragraph tokenization with an exact piece → original character map (a
    SentencePiece tokenizer, or a WordPiece one for the Chinese releases)."""

    sp = tokenizer.sp_model
    if sp is None:
        return tokenize_paragraph_wordpiece(paragraph, tokenizer)
    pieces = encode_pieces(sp, preprocess_text(paragraph, lower=do_lower_case))
    ids = tuple(sp.PieceToId(p) for p in pieces)
    pre, pre_src = preprocess_with_offsets(paragraph, lower=do_lower_case)
    src_keep = [i for i, c in enumerate(pre) if c != " "]
    dst_chars, dst_owner = [], []
    for t, piece in enumerate(pieces):
        for c in piece.replace("▁", " "):
            if c != " ":
                dst_chars.append(c)
                dst_owner.append(t)
    spans, coverage, exact = _align_chars("".join(pre[i] for i in src_keep), "".join(dst_chars))
    lo = [None] * len(pieces)
    hi = [None] * len(pieces)
    for (a, b), t in zip(spans, dst_owner):
        if b > a:
            lo[t] = a if lo[t] is None else min(lo[t], a)
            hi[t] = b if hi[t] is None else max(hi[t], b)
    char_end = _char_ends(paragraph, pre_src)
    starts, ends = _piece_offsets(lo, hi, src_keep, pre_src, char_end, len(paragraph))
    return ParagraphTokens(
        paragraph, tuple(pieces), ids, tuple(starts), tuple(ends), exact, coverage
    )


def _piece_offsets(lo, hi, src_keep, pre_src, char_end, n_chars):
    """Original [start, end) per piece from its span over the kept preprocessed chars."""
    starts, ends = [0] * len(lo), [0] * len(lo)
    for t in range(len(lo)):
        if lo[t] is not None:
            starts[t] = pre_src[src_keep[lo[t]]]
            ends[t] = char_end[pre_src[src_keep[hi[t] - 1]]]
    nxt = n_chars
    for t in range(len(lo) - 1, -1, -1):  # empty pieces: start at the next real piece
        if lo[t] is None:
            starts[t] = nxt
        else:
            nxt = starts[t]
    prev = 0
    for t in range(len(lo)):  # ... and end where the previous real piece ends
        if lo[t] is None:
            ends[t] = prev
        else:
            prev = ends[t]
    return starts, ends


def wordpiece_char_stream(text: str, do_lower_case: bool) -> List[int]:
    """The original index of every non-space character BERT's basic tokenizer makes of
    `text`, in order (its words are these characters, consecutive): dropped characters
    (control, NUL, U+FFFD, nonspacing marks after NFD) give none, whitespace separates."""
    owners: List[int] = []
    for i, ch in enumerate(text):
        if (
            ch in "\x00\ufffd"
            or wordpiece.is_control(ch)
            or wordpiece.is_whitespace(ch)
            or ch.isspace()
        ):
            continue
        out = ch
        if do_lower_case:
            out = "".join(
                c
                for c in unicodedata.normalize("NFD", ch.lower())
                if unicodedata.category(c) != "Mn"
            )
        owners += [i] * len(out)
    return owners


def tokenize_paragraph_wordpiece(paragraph: str, tokenizer) -> ParagraphTokens:
    """A paragraph's WordPiece pieces with exact original offsets: BERT's words are runs of
    the non-space characters its normalisation makes (one piece of a word covers as many of
    them as it has characters without "##"; an unknown word is one piece over all of its)."""
    basic, wp = tokenizer.basic_tokenizer, tokenizer.wordpiece_tokenizer
    owners = wordpiece_char_stream(paragraph, basic.do_lower_case)
    char_end = _char_ends(paragraph, owners)
    pieces, lo, hi = [], [], []
    pos = 0
    for word in basic.tokenize(paragraph):
        for piece in wp.tokenize(word):
            n = len(word) if piece == wp.unk_token else len(piece) - 2 * piece.startswith("##")
            pieces.append(piece)
            lo.append(owners[pos])
            hi.append(char_end[owners[pos + n - 1]])
            pos += n
    ids = tuple(tokenizer.convert_tokens_to_ids(pieces))
    return ParagraphTokens(paragraph, tuple(pieces), ids, tuple(lo), tuple(hi), True, 1.0)
