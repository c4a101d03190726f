"""Codepoint tables of Google's normalisation (combining marks, whitespace, digits) as regex
classes, shared by the Python preprocessing and the in-graph tokenizer so both drop the same
characters."""

from __future__ import annotations

import functools
import re
from typing import Iterable, Sequence
import unicodedata


def ranges_to_class(codepoints: Iterable[int]) -> str:
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
def combining_re():
    """Compiled Python regex matching one combining character."""
    cls = "".join(
        chr(a) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in _runs(combining_codepoints())
    )
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
