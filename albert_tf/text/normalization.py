"""Google's ALBERT text normalisation (whitespace collapse, NFKD, no accents, lower) applied
before SentencePiece, kept apart so every reader of raw text normalises the same way."""

from __future__ import annotations

import unicodedata

from albert_tf.text.codepoints import combining_re


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
        outputs = combining_re().sub("", outputs)
    if lower:
        outputs = outputs.lower()
    return outputs
