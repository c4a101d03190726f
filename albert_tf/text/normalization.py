"""Google's ALBERT text normalisation, applied to raw text before SentencePiece.

Whitespace is collapsed, text is NFKD-normalised, combining marks (accents) are dropped and,
optionally, the text is lowercased. Every reader of raw text in albert_tf calls these functions,
so all of them normalise the same way.
"""

from __future__ import annotations

import unicodedata

from albert_tf.text.codepoints import combining_re


def convert_to_unicode(text) -> str:
    """Returns text as a `str`, decoding bytes as UTF-8.

    Invalid UTF-8 bytes are dropped, as Google's `convert_to_unicode` helper does.

    Args:
        text: A `str` (returned as it is) or `bytes` (decoded as UTF-8).

    Returns:
        The text as a `str`.

    Raises:
        TypeError: when `text` is neither `str` nor `bytes`.
    """
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise TypeError(f"expected str or bytes, got {type(text).__name__}")


def preprocess_text(inputs, remove_space=True, lower=False) -> str:
    """Normalises text as Google's ALBERT does before SentencePiece.

    The steps are: collapse runs of whitespace to one space and strip both ends, NFKD-normalise,
    drop combining marks (so accents are always stripped), then lowercase if asked. Unlike some
    BERT-family tokenizers, quotes are not rewritten. ASCII text skips the Unicode steps, which
    do nothing to it, so the common case is fast.

    `FullTokenizer.tokenize` does not normalise in SentencePiece mode (neither does Google's);
    call this function (or `FullTokenizer.preprocess`) on the text first.

    Args:
        inputs: The text, a `str` or UTF-8 `bytes` (invalid bytes are dropped).
        remove_space: Whether to collapse whitespace runs to single spaces and strip the ends.
            Defaults to `True`.
        lower: Whether to lowercase the result. Pass the model's `do_lower_case` (`True` for
            Google's English releases). Defaults to `False`.

    Returns:
        The normalised text, a `str`.

    Raises:
        TypeError: when `inputs` is neither `str` nor `bytes` (raised by `convert_to_unicode`).

    Example:

    >>> import albert_tf
    >>> albert_tf.preprocess_text("  Crème   Brûlée ")
    'Creme Brulee'
    >>> albert_tf.preprocess_text("Crème Brûlée", lower=True)
    'creme brulee'
    >>> albert_tf.preprocess_text(b"tab\\tand  spaces", remove_space=False)
    'tab\\tand  spaces'
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
