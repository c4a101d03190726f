"""brightmart/albert_zh checkpoints (the most used Chinese ALBERTs) seen in Google's names.

Its own layout (albert_tiny_zh, base, large, xlarge; configs with `ln_type`) keeps one block
under `bert/encoder/layer_shared/` in BERT's names, and factorizes only the word embedding:
`word_embeddings` [V, E] times `word_embeddings_2` [E, H] (no bias) before the H-wide position
and token-type embeddings and LayerNorm; its MLM decoder multiplies by both transposed. That
is Google's ALBERT with embedding_size = hidden_size and the word table folded, V×E · E×H →
V×H (done in float64): exact, with the tied decoder x·W2ᵀ·Embᵀ = x·(Emb·W2)ᵀ. Its `*_google`
releases are in Google's own layout and load as they are. Its pre-LN variant (`ln_type:
"preln"`, only in the withdrawn xlarge of 2019-10-07) computes something Google's
architecture cannot, and is refused. tests/data/fixtures/albert_zh/README.md has the table
and brightmart's own outputs.

>>> sorted(google_names({"bert/encoder/layer_shared/output/dense/kernel": (64, 32)}))
['bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/kernel']
"""

from __future__ import annotations

import re

import numpy as np

SHARED = "bert/encoder/layer_shared/"
GOOGLE_BLOCK = "bert/encoder/transformer/group_0/inner_group_0/"
FOLDED = ("bert/embeddings/word_embeddings", "bert/embeddings/word_embeddings_2")
# brightmart's block names (after layer_shared/) → Google's (after inner_group_0/)
BLOCK_NAMES = (
    ("attention/self/", "attention_1/self/"),
    ("attention/output/dense/", "attention_1/output/dense/"),
    ("attention/output/LayerNorm/", "LayerNorm/"),
    ("intermediate/dense/", "ffn_1/intermediate/dense/"),
    ("output/dense/", "ffn_1/intermediate/output/dense/"),
    ("output/LayerNorm/", "LayerNorm_1/"),
)
# BERT's per-layer scopes: a BERT checkpoint, neither Google's ALBERT nor brightmart's
_BERT_LAYER = re.compile(r"^bert/encoder/layer_\d+/")


def is_brightmart(names) -> bool:
    """Whether checkpoint variable names are in brightmart's own layout."""
    return any(n.startswith(SHARED) or n == FOLDED[1] for n in names)


def is_bert(names) -> bool:
    """Whether checkpoint variable names are BERT's (one scope per layer, no sharing)."""
    return any(_BERT_LAYER.match(n) for n in names)


def google_name(name: str) -> str:
    """Google's name of one brightmart variable name (others unchanged)."""
    if name.startswith(SHARED):
        rest = name[len(SHARED) :]
        for theirs, ours in BLOCK_NAMES:
            if rest.startswith(theirs):
                return GOOGLE_BLOCK + ours + rest[len(theirs) :]
    return name


def google_names(shapes: dict) -> dict:
    """{Google name: shape} of a brightmart checkpoint's {name: shape}, the word table folded."""
    out = {google_name(n): tuple(s) for n, s in shapes.items() if n != FOLDED[1]}
    if FOLDED[0] in shapes and FOLDED[1] in shapes:
        out[FOLDED[0]] = (shapes[FOLDED[0]][0], shapes[FOLDED[1]][1])
    return out


def google_view(shapes: dict, read):
    """(shapes, read) of a brightmart checkpoint in Google's names: `read(google_name)` gives
    the tensor, the word table as Emb·W2 computed in float64."""
    back = {google_name(n): n for n in shapes if n != FOLDED[1]}

    def read_google(name):
        if name == FOLDED[0] and FOLDED[1] in shapes:
            folded = np.asarray(read(FOLDED[0]), np.float64) @ np.asarray(
                read(FOLDED[1]), np.float64
            )
            return folded.astype(np.asarray(read(FOLDED[1])).dtype)
        return read(back[name])

    return google_names(shapes), read_google
