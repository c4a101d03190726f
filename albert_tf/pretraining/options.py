"""The pretraining data builder's options (Google's flag names and defaults, plus ours)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class BuilderOptions:
    """Knobs of the builder; defaults are Google's flags (plus ours at the end)."""

    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 40
    random_seed: int = 12345
    do_whole_word_mask: bool = True
    favor_shorter_ngram: bool = True
    random_next_sentence: bool = False
    ngram: int = 3
    # ours
    shuffle_buffer_size: int = 2048  # instances held for the bounded shuffle
    input_format: str = "auto"  # "auto" | "lines" | "wiki"
    keep_wiki_titles: bool = False  # keep the title line after <doc ...>
    split_wiki_sentences: bool = True  # WikiExtractor lines are paragraphs

    def __post_init__(self):
        if self.max_seq_length < 5:
            raise ValueError(f"max_seq_length must be >= 5, got {self.max_seq_length}")
        if self.ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {self.ngram}")
        if self.dupe_factor < 1:
            raise ValueError(f"dupe_factor must be >= 1, got {self.dupe_factor}")
        if self.input_format not in ("auto", "lines", "wiki"):
            raise ValueError(f"input_format must be auto, lines or wiki: {self.input_format!r}")
