"""Read brightmart/albert_zh checkpoints (the most used Chinese ALBERTs) under Google's names.

brightmart's own layout (albert_tiny_zh, base, large, xlarge; configs with `ln_type`) keeps one
shared block under `bert/encoder/layer_shared/` with BERT's names, and factorizes only the word
embedding: `word_embeddings` [V, E] times `word_embeddings_2` [E, H] (no bias), followed by the
H-wide position and token-type embeddings and the LayerNorm; its masked-LM decoder multiplies by
both factors transposed. That is Google's ALBERT with embedding_size = hidden_size once the two
factors are multiplied into one V×H table (done in float64). The result is exact, the tied
decoder included: x·W2ᵀ·Embᵀ = x·(Emb·W2)ᵀ. brightmart's `*_google` releases already use
Google's layout and load unchanged. The pre-LN variant (`ln_type: "preln"`, only in the
withdrawn xlarge of 2019-10-07) computes something Google's architecture cannot, and is
refused. tests/data/fixtures/albert_zh/README.md has the table and brightmart's own outputs.

Example:

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
    """Tell whether checkpoint variable names are in brightmart's own layout.

    Args:
        names: iterable of str. The checkpoint's variable names.

    Returns:
        bool. True when a name lies under `bert/encoder/layer_shared/` or is
        `bert/embeddings/word_embeddings_2`.
    """
    return any(n.startswith(SHARED) or n == FOLDED[1] for n in names)


def is_bert(names) -> bool:
    """Tell whether checkpoint variable names are BERT's (one scope per layer, no sharing).

    Args:
        names: iterable of str. The checkpoint's variable names.

    Returns:
        bool. True when a name lies under `bert/encoder/layer_<n>/`.
    """
    return any(_BERT_LAYER.match(n) for n in names)


def google_name(name: str) -> str:
    """Translate one brightmart variable name to Google's name.

    Args:
        name: str. A variable name of a brightmart checkpoint.

    Returns:
        str. Google's name for a shared-block variable; any other name unchanged.

    Example:

    >>> google_name("bert/encoder/layer_shared/attention/output/LayerNorm/gamma")
    'bert/encoder/transformer/group_0/inner_group_0/LayerNorm/gamma'
    """
    if name.startswith(SHARED):
        rest = name[len(SHARED) :]
        for theirs, ours in BLOCK_NAMES:
            if rest.startswith(theirs):
                return GOOGLE_BLOCK + ours + rest[len(theirs) :]
    return name


def google_names(shapes: dict) -> dict:
    """Translate a brightmart checkpoint's names and shapes to Google's.

    The two word-embedding factors become one `bert/embeddings/word_embeddings` of shape
    [V, H].

    Args:
        shapes: dict. brightmart variable name -> shape.

    Returns:
        dict. Google name -> shape as a tuple.
    """
    out = {google_name(n): tuple(s) for n, s in shapes.items() if n != FOLDED[1]}
    if FOLDED[0] in shapes and FOLDED[1] in shapes:
        out[FOLDED[0]] = (shapes[FOLDED[0]][0], shapes[FOLDED[1]][1])
    return out


def albert_zh_view(shapes: dict, read):
    """Give a brightmart checkpoint's tensors under Google's names.

    Args:
        shapes: dict. brightmart variable name -> shape.
        read: callable. `read(name)` returns the tensor of a brightmart name.

    Returns:
        tuple `(google_shapes, read_google)`: Google name -> shape, and a function returning a
        tensor by its Google name. The word table is computed as Emb·W2 in float64 and
        returned in the checkpoint's dtype.
    """
    back = {google_name(n): n for n in shapes if n != FOLDED[1]}

    def read_google(name):
        if name == FOLDED[0] and FOLDED[1] in shapes:
            folded = np.asarray(read(FOLDED[0]), np.float64) @ np.asarray(
                read(FOLDED[1]), np.float64
            )
            return folded.astype(np.asarray(read(FOLDED[1])).dtype)
        return read(back[name])

    return google_names(shapes), read_google
