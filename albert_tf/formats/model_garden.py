"""TensorFlow Model Garden's TF2 ALBERT (`official.nlp.modeling.networks.AlbertEncoder`) seen in
Google's names: its TF2 encoder / pretrainer checkpoints
(`official/nlp/tools/tf2_albert_encoder_checkpoint_converter.py`) and the Keras variable names
of the TF Hub / Kaggle SavedModels made from it (`export_tfhub.py`; read in `formats/tfhub.py`).

Model Garden's AlbertEncoder has one shared Transformer block (no groups, no inner groups), so it
maps to Google's `group_0/inner_group_0`. Its attention keeps per-head kernels: q/k/v kernels
[H, heads, head_size] and biases [heads, head_size], the output kernel [heads, head_size, H];
they are reshaped (losslessly) to Google's [H, H] / [H]. Checkpoint keys name layers by their
position: `encoder/layer_with_weights-N/` is, in order, the word, position and type tables, the
embedding LayerNorm, the E→H projection (only when E != H, so N shifts by one when E == H), the
shared block, the pooler. A pretrainer checkpoint stores the word table once, as
`masked_lm/embedding_table`, and has no sentence-order head.

>>> google_shape("bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel",
...              (32, 4, 8))
(32, 32)
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Optional

import numpy as np

from albert_tf.core.config import AlbertConfig
from albert_tf.core.errors import InputError
from albert_tf.core.saved_model_proto import checkpoint_reader
from albert_tf.formats.common import rename
from albert_tf.formats.tf1 import resolve_checkpoint_path

WORD = "bert/embeddings/word_embeddings"
POSITION = "bert/embeddings/position_embeddings"
TOKEN_TYPE = "bert/embeddings/token_type_embeddings"
BLOCK = "bert/encoder/transformer/group_0/inner_group_0/"
QUERY = BLOCK + "attention_1/self/query/kernel"
FFN = BLOCK + "ffn_1/intermediate/dense/kernel"
OUTPUT_KERNEL = BLOCK + "attention_1/output/dense/kernel"
SOP = ("cls/seq_relationship/output_bias", "cls/seq_relationship/output_weights")

# One shared block: Google's name under BLOCK ← the SavedModel's Keras name under
# `transformer/` ← the TF2 checkpoint key under the block's `layer_with_weights-N/`.
BLOCK_NAMES = (
    ("attention_1/self/query", "self_attention/query", "_attention_layer/_query_dense"),
    ("attention_1/self/key", "self_attention/key", "_attention_layer/_key_dense"),
    ("attention_1/self/value", "self_attention/value", "_attention_layer/_value_dense"),
    (
        "attention_1/output/dense",
        "self_attention/attention_output",
        "_attention_layer/_output_dense",
    ),
    ("LayerNorm", "self_attention_layer_norm", "_attention_layer_norm"),
    ("ffn_1/intermediate/dense", "intermediate", "_intermediate_dense"),
    ("ffn_1/intermediate/output/dense", "output", "_output_dense"),
    ("LayerNorm_1", "output_layer_norm", "_output_layer_norm"),
)
_LEAF = r"/(kernel|bias|gamma|beta)"
_P = r"(?:.+/)?"  # any scope above the encoder's own layer names
# Keras variable names of Model Garden's AlbertEncoder and MLM head (a SavedModel) → Google's.
SAVED_MODEL_RULES = (
    (_P + r"word_embeddings/embeddings", WORD),
    (_P + r"position_embedding/embeddings", POSITION),
    (_P + r"type_embeddings/embeddings", TOKEN_TYPE),
    (_P + r"embeddings/layer_norm" + _LEAF, r"bert/embeddings/LayerNorm/\1"),
    (_P + r"embedding_projection" + _LEAF, r"bert/encoder/embedding_hidden_mapping_in/\1"),
    *(
        (_P + f"transformer/{keras}" + _LEAF, f"{BLOCK}{google}/\\1")
        for google, keras, _ in BLOCK_NAMES
    ),
    (_P + r"pooler_transform" + _LEAF, r"bert/pooler/dense/\1"),
    (_P + r"cls/predictions/output_bias(?:/bias)?", "cls/predictions/output_bias"),
    (
        _P + r"cls/predictions/transform/(dense|LayerNorm)" + _LEAF,
        r"cls/predictions/transform/\1/\2",
    ),
)
_LAYER = "encoder/layer_with_weights-"
_BLOCK_KEY = re.compile(r"^encoder/layer_with_weights-(\d+)/_attention_layer/")
_BERT_LAYER = re.compile(r"(^|/)transformer/layer_\d+/")  # Model Garden's BertEncoder
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_NOT_WEIGHTS = re.compile(r"(^optimizer/|/\.OPTIMIZER_SLOT/)")  # a training checkpoint's slots


def checkpoint_rules(block: int) -> tuple:
    """Rules (TF2 checkpoint key → Google name) for an encoder whose shared block is
    `layer_with_weights-{block}` (5 with the E→H projection at 4, else 4)."""
    rules = [
        (_LAYER + "0/embeddings", WORD),
        (_LAYER + "1/embeddings", POSITION),
        (_LAYER + "2/embeddings", TOKEN_TYPE),
        (_LAYER + "3" + _LEAF, r"bert/embeddings/LayerNorm/\1"),
        *(
            (f"{_LAYER}{block}/{key}" + _LEAF, f"{BLOCK}{google}/\\1")
            for google, _, key in BLOCK_NAMES
        ),
        (f"{_LAYER}{block + 1}" + _LEAF, r"bert/pooler/dense/\1"),
        (r"masked_lm/dense" + _LEAF, r"cls/predictions/transform/dense/\1"),
        (r"masked_lm/layer_norm" + _LEAF, r"cls/predictions/transform/LayerNorm/\1"),
        (r"masked_lm/output_bias\.Sbias", "cls/predictions/output_bias"),
        (r"masked_lm/embedding_table", WORD),  # a pretrainer's only copy of the word table
    ]
    if block == 5:
        rules.append((_LAYER + "4" + _LEAF, r"bert/encoder/embedding_hidden_mapping_in/\1"))
    return tuple(rules)


def google_shape(google_name: str, shape) -> tuple:
    """Google's shape of a tensor stored per head ([H, heads, D] → [H, heads·D], [heads, D] →
    [heads·D], the output kernel [heads, D, H] → [heads·D, H]); other shapes unchanged."""
    shape = tuple(int(d) for d in shape)
    if google_name == OUTPUT_KERNEL and len(shape) == 3:
        return (shape[0] * shape[1], shape[2])
    if len(shape) == 3:
        return (shape[0], shape[1] * shape[2])
    if google_name.endswith("/bias") and len(shape) == 2:
        return (shape[0] * shape[1],)
    return shape


@dataclasses.dataclass
class GoogleView:
    """A Model Garden source seen in Google's names: shapes, `read(name)` (Google's shape),
    source names that map to nothing (`unused`) or are not weights (`ignored`), and what the
    tensors show of the config (`num_heads` from the per-head kernels)."""

    source: str
    shapes: dict
    read: Callable
    unused: list
    ignored: list
    num_heads: Optional[int]


def renamed_view(source, names: dict, read_source, rules, ignored=()) -> GoogleView:
    """The GoogleView of `names` (source name → shape) renamed by `rules`; the first source name
    (sorted, `encoder/` before `masked_lm/`) that maps to a Google name wins."""
    shapes, back, unused, heads = {}, {}, [], None
    for name in sorted(names):
        if name in ignored:
            continue
        google = rename(name, rules)
        if google is None or google in shapes:
            unused.append(name)
            continue
        shapes[google] = google_shape(google, names[name])
        back[google] = name
        if google == QUERY and len(names[name]) == 3:
            heads = int(names[name][1])

    def read(google):
        return np.asarray(read_source(back[google])).reshape(shapes[google])

    return GoogleView(source, shapes, read, unused, sorted(ignored), heads)


def check_is_albert(view: GoogleView, what: str):
    """An InputError naming `what` unless the view holds the encoder tables and a shared block;
    a BERT encoder (one block per layer) is named as such."""
    if any(_BERT_LAYER.search(n) for n in view.unused):
        raise InputError(
            f"{what} holds a BERT encoder (one Transformer block per layer, e.g. "
            f"{next(n for n in view.unused if _BERT_LAYER.search(n))}), not an ALBERT"
        )
    missing = [n for n in (WORD, POSITION, TOKEN_TYPE, QUERY, FFN) if n not in view.shapes]
    if missing:
        raise InputError(
            f"{what} holds no ALBERT encoder in Model Garden's names: nothing maps to {missing[0]} "
            f"({len(view.shapes)} of its variables map to ALBERT's)"
        )


def config_from_view(view: GoogleView, num_layers: int, hidden_act: str = "gelu") -> AlbertConfig:
    """The AlbertConfig the tensors give (vocabulary, E, H, FFN, heads, positions, type
    vocabulary); the number of layers and the activation are not in the tensors."""
    s = view.shapes
    vocab, embedding = s[WORD]
    return AlbertConfig(
        vocab_size=vocab,
        embedding_size=embedding,
        hidden_size=s[QUERY][0],
        num_hidden_layers=int(num_layers),
        num_attention_heads=view.num_heads or 1,
        intermediate_size=s[FFN][1],
        max_position_embeddings=s[POSITION][0],
        type_vocab_size=s[TOKEN_TYPE][0],
        hidden_act=hidden_act,
    )


def check_view_fits_config(config: AlbertConfig, view: GoogleView, config_file: str):
    """The head count and the block layout of a given config against the source; shapes are
    checked when the weights are assigned."""
    if view.num_heads is not None and config.num_attention_heads != view.num_heads:
        raise InputError(
            f"{config_file} does not fit {view.source}: num_attention_heads is "
            f"{config.num_attention_heads}, but its per-head kernels have {view.num_heads} heads"
        )
    if (config.num_hidden_groups, config.inner_group_num, config.sharing) != (1, 1, "all"):
        raise InputError(
            f"{config_file} does not fit {view.source}: Model Garden's AlbertEncoder has one "
            "shared block (num_hidden_groups 1, inner_group_num 1, sharing 'all')"
        )


# ---- TF2 checkpoints --------------------------------------------------------------------------
def is_model_garden_checkpoint(path) -> bool:
    """A TF2 object checkpoint (prefix, folder or file) with Model Garden's encoder keys."""
    try:
        names = checkpoint_reader(resolve_checkpoint_path(path)).get_variable_to_shape_map()
    except Exception:  # noqa: BLE001  not a readable checkpoint at all
        return False
    return any(n.startswith(_LAYER) for n in names)


def checkpoint_view(path) -> GoogleView:
    """The GoogleView of a Model Garden TF2 encoder or pretrainer checkpoint."""
    prefix = resolve_checkpoint_path(path)
    reader = checkpoint_reader(prefix)
    raw = reader.get_variable_to_shape_map()
    keys = {n[: -len(_VALUE_SUFFIX)]: n for n in raw if n.endswith(_VALUE_SUFFIX)}
    ignored = sorted(set(raw) - set(keys.values())) + sorted(
        k for k in keys if k == "save_counter" or _NOT_WEIGHTS.search(k)
    )
    blocks = sorted({int(m.group(1)) for m in map(_BLOCK_KEY.match, keys) if m})
    if len(blocks) > 1:
        raise InputError(
            f"checkpoint {prefix} holds {len(blocks)} Transformer blocks (Model Garden's "
            "BertEncoder layout, one per layer), not ALBERT's one shared block"
        )
    if not blocks:
        raise InputError(f"checkpoint {prefix} holds no Model Garden ALBERT encoder block")
    names = {k: tuple(raw[v]) for k, v in keys.items()}
    view = renamed_view(
        prefix, names, lambda k: reader.get_tensor(keys[k]), checkpoint_rules(blocks[0]), ignored
    )
    check_is_albert(view, f"checkpoint {prefix}")
    return view
