"""Options of the pretraining data builder: Google's flag names and defaults, plus albert_tf's
own additions."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class BuilderOptions:
    """Options of `build_pretraining_data`, with the names and defaults of Google's flags.

    The first ten fields are the flags of Google's `create_pretraining_data.py`, with its
    defaults; the last four are albert_tf's own. `build_pretraining_data`,
    `create_instances` and `iter_tokenized_documents` take them as keyword arguments.

    Args:
        max_seq_length: int. Length of each instance in pieces, [CLS] and [SEP]s included; at
            least 5. Defaults to 512.
        max_predictions_per_seq: int. Most masked pieces per instance. Defaults to 20.
        masked_lm_prob: float. Fraction of pieces to mask, before the
            `max_predictions_per_seq` cap (so at length 512 with 20 predictions only about
            3.9% are masked, as in Google's setup). Defaults to 0.15.
        short_seq_prob: float. Probability that a document's target length is a random
            length below `max_seq_length`, instead of the full length. Defaults to 0.1.
        dupe_factor: int. How many times each input is passed over, each time with other
            random pairs and masks; at least 1. Defaults to 40.
        random_seed: int. Seed of every random choice; the same seed gives byte-identical
            output for any `num_workers`. Defaults to 12345.
        do_whole_word_mask: bool. Mask whole words (all pieces of a word together).
            Defaults to True.
        favor_shorter_ngram: bool. Draw n-gram lengths with p(n) ∝ 1/n (short spans more
            often); False reverses the weights. Defaults to True.
        random_next_sentence: bool. BERT's next-sentence task (segment B from another
            document half of the time) instead of ALBERT's sentence-order task. Defaults to
            False.
        ngram: int. Longest masked span, in words; at least 1. Defaults to 3.
        shuffle_buffer_size: int. Instances held for the bounded shuffle of each (file,
            round) job. Defaults to 2048.
        input_format: str. "lines" (one sentence per line, a blank line between documents:
            Google's format), "wiki" (WikiExtractor output) or "auto" (wiki when the first
            non-blank line starts with `<doc`). Defaults to "auto".
        keep_wiki_titles: bool. In wiki input, keep the title line after `<doc ...>` as the
            first sentence. Defaults to False.
        split_wiki_sentences: bool. In wiki input, split each line (a paragraph) into
            sentences. Defaults to True.

    Raises:
        ValueError: when `max_seq_length` < 5, `ngram` < 1, `dupe_factor` < 1 or
            `input_format` is not "auto", "lines" or "wiki".

    Example:

    >>> from albert_tf.pretraining.options import BuilderOptions
    >>> options = BuilderOptions(max_seq_length=128, dupe_factor=5)
    >>> options.max_predictions_per_seq, options.masked_lm_prob
    (20, 0.15)
    """

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
    # albert_tf's own options
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
