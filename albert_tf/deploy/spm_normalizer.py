"""A SentencePiece model whose own normalizer does Google's ALBERT `preprocess_text`, for
clients that feed SentencePiece raw text: the TFLite Task Library (which lowercases A-Z and
nothing else) and the string-in LiteRT files (tf-text's FastSentencepieceTokenizer, the only
normalisation a LiteRT file can run on the device).

Google's pipeline feeds SentencePiece `preprocess_text(text, lower=True)`: whitespace collapsed,
NFKD, combining marks dropped, lowercased; then the model's normalizer (`nmt_nfkc` in Google's
releases: NFKC and whitespace clean-up) runs. A normalizer is data in the model
(`normalizer_spec.precompiled_charsmap`, a compiled table of rewrite rules, longest match from
the left), so this writes a table that maps each character c to nmt_nfkc(preprocess(c)): the
model then does to raw text what Google's pipeline does to it, one character at a time, and its
own `remove_extra_whitespaces` collapses the spaces the whitespace characters became. Pieces,
ids and scores are kept; only the copy in a deployed file gets the new table.

What it cannot do: Google's digit+"," fix-up, applied to pieces after encoding (a piece such as
"▁1990," re-encoded as "▁1990", ","; the string-in LiteRT files do it in the graph, the Task
Library cannot); rules that need context (Python's final-sigma lowercasing: "Σ" at the end of a
word is "ς" in Python, "σ" here); and Viterbi ties, where the same pieces score equally.

The table is compiled by SentencePiece's own trainer (`normalization_rule_tsv`) on a throwaway
model, then copied into the real model's `normalizer_spec`.
"""

from __future__ import annotations

import functools
import unicodedata

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from albert_tf.core import fileio

MAX_CODE_POINT = 0x10FFFF
NORMALIZER_NAME = "nmt_nfkc_albert_preprocess"
# a throwaway corpus for the trainer that compiles the table
TRAINER_CORPUS = "a b c d e f g\nabc def\n" * 10


def preprocess_char(ch: str, lower: bool = True) -> str:
    """Google's preprocess_text for one character: whitespace → " ", NFKD, combining marks
    dropped, lowercased (with `lower`)."""
    if ch.isspace():
        return " "
    out = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return out.lower() if lower else out


def preprocess_rules(model_proto: bytes, lower: bool = True) -> list:
    """[(char, replacement)] for every character the combined normalisation changes: the
    model's own normalizer (without dummy prefix, whitespace escaping or collapsing) applied to
    preprocess_char of the character."""
    normalizer = spm.SentencePieceNormalizer(
        model_proto=model_proto,
        add_dummy_prefix=False,
        escape_whitespaces=False,
        remove_extra_whitespaces=False,
    )
    rules = []
    for cp in range(1, MAX_CODE_POINT + 1):
        if 0xD800 <= cp <= 0xDFFF:  # surrogates: not characters
            continue
        ch = chr(cp)
        pre = preprocess_char(ch, lower)
        target = pre if pre in ("", " ") else normalizer.normalize(pre)
        if target != ch:
            rules.append((ch, target))
    return rules


def rules_tsv(rules) -> str:
    """Rules in SentencePiece's normalization TSV: hex code points, source TAB target."""
    hexes = lambda s: " ".join(f"{ord(c):X}" for c in s)
    return "".join(f"{hexes(src)}\t{hexes(tgt)}\n" for src, tgt in rules)


def compile_charsmap(tsv_text: str) -> bytes:
    """A `precompiled_charsmap` compiled from a rule TSV by SentencePiece's trainer."""
    with fileio.scratch_folder() as folder:
        tsv = fileio.write_text(fileio.join(folder, "rules.tsv"), tsv_text)
        corpus = fileio.write_text(fileio.join(folder, "corpus.txt"), TRAINER_CORPUS)
        prefix = fileio.join(folder, "m")
        spm.SentencePieceTrainer.train(
            input=corpus,
            model_prefix=prefix,
            vocab_size=20,
            hard_vocab_limit=False,
            normalization_rule_tsv=tsv,
            minloglevel=2,
        )
        proto = model_pb2.ModelProto()
        proto.ParseFromString(fileio.read_bytes(prefix + ".model"))
    return proto.normalizer_spec.precompiled_charsmap


def with_normalizer(model_proto: bytes, charsmap: bytes, name: str = NORMALIZER_NAME) -> bytes:
    """The model with its normalizer table replaced (pieces, ids and scores kept)."""
    proto = model_pb2.ModelProto()
    proto.ParseFromString(model_proto)
    proto.normalizer_spec.name = name
    proto.normalizer_spec.precompiled_charsmap = charsmap
    return proto.SerializeToString()


@functools.lru_cache(maxsize=8)
def preprocessing_model(model_proto: bytes, lower: bool = True) -> bytes:
    """A SentencePiece model that applies Google's `preprocess_text` itself (3-4 s a model).

    Fed raw text, it gives the pieces Google's `preprocess_text(text, lower=lower)` then the
    original model give, up to what the module docstring lists (the comma fix-up, context rules
    and Viterbi ties). Embed it where a client feeds SentencePiece raw text.

    Args:
        model_proto: The serialized SentencePiece model (a `30k-clean.model`'s bytes).
        lower: Lowercase too, as `do_lower_case` (Google's English releases).

    Returns:
        The serialized model with the combined normalizer.

    >>> import sentencepiece as spm
    >>> from albert_tf.core import fileio
    >>> original = fileio.read_bytes("tests/data/fixtures/spm.model")
    >>> sp = spm.SentencePieceProcessor(model_proto=preprocessing_model(original))
    >>> sp.encode("Café  NAÏVE", out_type=str) == spm.SentencePieceProcessor(
    ...     model_proto=original).encode("cafe naive", out_type=str)
    True
    """
    charsmap = compile_charsmap(rules_tsv(preprocess_rules(model_proto, lower)))
    return with_normalizer(model_proto, charsmap)
