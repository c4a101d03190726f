"""Text to piece ids as Google's fine-tuning code does it: `preprocess_text` (in SentencePiece
mode), then the tokenizer.

`TextEncoder` is shared by the GLUE and RACE feature builders; it also fingerprints the tokenizer
so cached features are rebuilt when the tokenizer changes.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from albert_tf.text.normalization import preprocess_text
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.text.vocab_files import tokenizer_fingerprint


@dataclasses.dataclass
class TextEncoder:
    """Turns raw text into piece ids as Google's fine-tuning scripts do.

    In SentencePiece mode `tokenize` first applies Google's `preprocess_text` (whitespace
    collapse, accent stripping, lowercasing when `do_lower_case`), which
    `FullTokenizer.tokenize` alone does not; in WordPiece mode the tokenizer normalises itself.
    Build one with `TextEncoder.from_files`.

    Args:
        tokenizer: The `FullTokenizer` that splits the text.
        do_lower_case: Whether text is lowercased before SentencePiece. Defaults to `True`.
        spm_model_file: Path of the tokenizer's SentencePiece model, or `None` in WordPiece
            mode. Its presence turns preprocessing on, and it is what `fingerprint` hashes.
            Defaults to `None`.
        vocab_file: Path of the tokenizer's WordPiece vocabulary (WordPiece mode), or `None`.
            Defaults to `None`.

    Example:

    >>> import albert_tf
    >>> encoder = albert_tf.TextEncoder.from_files(
    ...     spm_model_file="tests/data/fixtures/albert_tiny/30k-clean.model")
    >>> encoder.tokenize("Héllo,   World!")
    ['▁', 'h', 'ell', 'o', ',', '▁w', 'or', 'ld', '!']
    >>> encoder.ids("Héllo,   World!")
    [13, 397, 489, 113, 16, 248, 109, 338, 588]
    >>> encoder.cls_id, encoder.sep_id, encoder.pad_id
    (2, 3, 0)
    >>> sorted(encoder.fingerprint())
    ['do_lower_case', 'tokenizer']
    """

    tokenizer: object
    do_lower_case: bool = True
    spm_model_file: Optional[str] = None
    vocab_file: Optional[str] = None

    @classmethod
    def from_files(cls, spm_model_file=None, vocab_file=None, do_lower_case=True):
        """Builds a TextEncoder on a new `FullTokenizer` of the given files.

        Args:
            spm_model_file: Path of a SentencePiece model (Google's English releases).
                Defaults to `None`.
            vocab_file: Path of a WordPiece vocabulary, used when `spm_model_file` is not
                given (Google's Chinese releases). Defaults to `None`.
            do_lower_case: Whether text is lowercased. Defaults to `True`.

        Returns:
            A `TextEncoder`.

        Raises:
            ValueError: when neither file is given, or the tokenizer lacks `[CLS]`, `[SEP]`
                or `[MASK]` (raised by `FullTokenizer`).
        """
        tok = FullTokenizer(
            vocab_file=vocab_file, do_lower_case=do_lower_case, spm_model_file=spm_model_file
        )
        return cls(tok, do_lower_case, spm_model_file, vocab_file)

    def tokenize(self, text: str) -> list:
        """Splits raw text into pieces, after Google's preprocessing in SentencePiece mode.

        Args:
            text: The raw text.

        Returns:
            A list of piece strings.
        """
        if self.spm_model_file:
            text = preprocess_text(text, lower=self.do_lower_case)
        return self.tokenizer.tokenize(text)

    def convert_tokens_to_ids(self, tokens) -> list:
        """Maps pieces to ids (unknown pieces to the unknown id).

        Args:
            tokens: A sequence of piece strings.

        Returns:
            A list of int ids.
        """
        return self.tokenizer.convert_tokens_to_ids(tokens)

    def ids(self, text: str) -> list:
        """Splits raw text into piece ids (`tokenize`, then `convert_tokens_to_ids`).

        Args:
            text: The raw text.

        Returns:
            A list of int ids.
        """
        return self.convert_tokens_to_ids(self.tokenize(text))

    @property
    def cls_id(self):
        """Id of `[CLS]`."""
        return self.tokenizer.cls_id

    @property
    def sep_id(self):
        """Id of `[SEP]`."""
        return self.tokenizer.sep_id

    @property
    def pad_id(self):
        """Id of the padding piece."""
        return self.tokenizer.pad_id

    def fingerprint(self) -> dict:
        """Describes what of the tokenizer changes the features, for feature-cache keys.

        Returns:
            A dict: `tokenizer`, the SHA-256 of the model or vocabulary file (or `None`), and
            `do_lower_case`.
        """
        path = self.spm_model_file or self.vocab_file
        return {
            "tokenizer": tokenizer_fingerprint(path) if path else None,
            "do_lower_case": self.do_lower_case,
        }
