"""Text → piece ids as Google's fine-tuning code does it: preprocess_text (in SentencePiece mode)
then the tokenizer. One object, shared by the GLUE and RACE builders, that also fingerprints
the tokenizer for feature caches."""

from __future__ import annotations

import dataclasses
from typing import Optional

from albert_tf.text.normalization import preprocess_text
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.text.vocab_files import tokenizer_fingerprint


@dataclasses.dataclass
class TextEncoder:
    tokenizer: object
    do_lower_case: bool = True
    spm_model_file: Optional[str] = None
    vocab_file: Optional[str] = None

    @classmethod
    def from_files(cls, spm_model_file=None, vocab_file=None, do_lower_case=True):
        tok = FullTokenizer(
            vocab_file=vocab_file, do_lower_case=do_lower_case, spm_model_file=spm_model_file
        )
        return cls(tok, do_lower_case, spm_model_file, vocab_file)

    def tokenize(self, text: str) -> list:
        """Pieces of `text` after Google's preprocessing (lowercasing, accent stripping)."""
        if self.spm_model_file:
            text = preprocess_text(text, lower=self.do_lower_case)
        return self.tokenizer.tokenize(text)

    def convert_tokens_to_ids(self, tokens) -> list:
        return self.tokenizer.convert_tokens_to_ids(tokens)

    def ids(self, text: str) -> list:
        return self.convert_tokens_to_ids(self.tokenize(text))

    @property
    def cls_id(self):
        return self.tokenizer.cls_id

    @property
    def sep_id(self):
        return self.tokenizer.sep_id

    @property
    def pad_id(self):
        return self.tokenizer.pad_id

    def fingerprint(self) -> dict:
        """What of the tokenizer changes the features (for cache keys)."""
        path = self.spm_model_file or self.vocab_file
        return {
            "tokenizer": tokenizer_fingerprint(path) if path else None,
            "do_lower_case": self.do_lower_case,
        }
