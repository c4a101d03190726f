"""AlbertConfig: the hyperparameters of an ALBERT model, in Google's `albert_config.json` names."""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
import os
from typing import Any

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.core.fileio import write_text_atomic

# Keys of Google's released albert_config.json files that its model never reads: accepted and
# round-tripped through `extra`, so a converted config still equals the released one.
KNOWN_UNUSED_KEYS = ("net_structure_type", "gap_size", "num_memory_blocks", "layers_to_keep")
# brightmart/albert_zh's configs: BERT's unused pooler keys, and ln_type (its layout, read in
# _brightmart_layout); kept in `extra` the same way
BRIGHTMART_KEYS = (
    "directionality",
    "pooler_fc_size",
    "pooler_num_attention_heads",
    "pooler_num_fc_layers",
    "pooler_size_per_head",
    "pooler_type",
    "ln_type",
)

ACTIVATIONS = ("gelu", "gelu_new", "gelu_exact", "relu", "tanh", "linear")
SHARING = ("all", "attention", "ffn", "none")


@dataclasses.dataclass
class AlbertConfig:
    """ALBERT hyperparameters. Defaults are Google's (the xxlarge shape); `vocab_size` is required.

    `sharing` selects the paper's Table 4 ablation: "all" (the released layout, composes with
    groups), "attention" (attention shared, FFN per layer), "ffn" (FFN shared, attention per
    layer) or "none" (Google writes this as num_hidden_groups == num_hidden_layers).
    `recompute_grad` (ours, a training-memory option): each shared block's activations are
    recomputed in the backward pass instead of kept (same gradients, less memory, more time).
    Keys of a released config that the model does not use (KNOWN_UNUSED_KEYS) are kept in
    `extra`; any other unknown key is an error (a typo would otherwise be silently ignored).
    """

    vocab_size: int
    embedding_size: int = 128
    hidden_size: int = 4096
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    num_attention_heads: int = 64
    intermediate_size: int = 16384
    inner_group_num: int = 1
    down_scale_factor: int = 1
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    sharing: str = "all"
    recompute_grad: bool = False
    extra: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.sharing == "none" and self.num_hidden_groups not in (1, self.num_hidden_layers):
            raise ValueError(
                "AlbertConfig: sharing='none' gives every layer its own block, which Google "
                "writes as num_hidden_groups == num_hidden_layers; got num_hidden_groups="
                f"{self.num_hidden_groups} with num_hidden_layers={self.num_hidden_layers}"
            )
        if self.sharing == "none":
            self.num_hidden_groups = self.num_hidden_layers
        self.validate()

    # ---- validation -------------------------------------------------------------------
    def validate(self) -> None:
        """Raise one ValueError naming the field that makes this config unusable."""
        positive = (
            "vocab_size",
            "embedding_size",
            "hidden_size",
            "num_hidden_layers",
            "num_hidden_groups",
            "num_attention_heads",
            "intermediate_size",
            "inner_group_num",
            "max_position_embeddings",
            "type_vocab_size",
        )
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"AlbertConfig.{name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"AlbertConfig.hidden_size ({self.hidden_size}) is not divisible by "
                f"num_attention_heads ({self.num_attention_heads})"
            )
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ValueError(
                f"AlbertConfig.num_hidden_groups ({self.num_hidden_groups}) is larger than "
                f"num_hidden_layers ({self.num_hidden_layers}): some groups would never be used"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(
                f"AlbertConfig.hidden_act {self.hidden_act!r} is unknown; use one of {ACTIVATIONS}"
            )
        if not isinstance(self.recompute_grad, bool):
            raise ValueError(
                f"AlbertConfig.recompute_grad must be true or false, got {self.recompute_grad!r}"
            )
        if self.sharing not in SHARING:
            raise ValueError(
                f"AlbertConfig.sharing {self.sharing!r} is unknown; use one of {SHARING}"
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not 0.0 <= float(value) < 1.0:
                raise ValueError(f"AlbertConfig.{name} must be in [0, 1), got {value!r}")
        if not float(self.initializer_range) > 0:
            raise ValueError(
                f"AlbertConfig.initializer_range must be > 0, got {self.initializer_range!r}"
            )

    # ---- derived --------------------------------------------------------------------------
    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def group_of_layer(self, layer: int) -> int:
        """Google's contiguous layer→group map: int(layer / num_hidden_layers *
        num_hidden_groups)."""
        return int(layer / self.num_hidden_layers * self.num_hidden_groups)

    # ---- (de)serialisation in Google's names ------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AlbertConfig:
        """Build from a dict in Google's key names; released-but-unused keys go to `extra`,
        any other unknown key raises InputError with the closest known key."""
        if "vocab_size" not in d:
            raise InputError("AlbertConfig: the config has no 'vocab_size'")
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: copy.deepcopy(v) for k, v in d.items() if k not in names and k != "extra"}
        extra.update(copy.deepcopy(d.get("extra", {})))
        for key in extra:
            _check_known_key(key, names)
        if "ln_type" in extra:
            known = _brightmart_layout(known, extra["ln_type"])
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """A dict in Google's key names; `sharing` and `recompute_grad` are written only when
        they are not the default ('all', false), so a released config round-trips unchanged."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        if d["sharing"] == "all":
            del d["sharing"]
        if not d["recompute_grad"]:
            del d["recompute_grad"]
        d.update(copy.deepcopy(self.extra))
        return d

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> AlbertConfig:
        """Read Google's albert_config.json; errors name the file."""
        path = os.fspath(path)
        try:
            data = json.loads(fileio.read_text(path))
        except FileNotFoundError:
            raise FileNotFoundError(f"ALBERT config file not found: {path}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError(f"ALBERT config file {path} is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise InputError(f"ALBERT config file {path} must hold a JSON object")
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as e:
            raise InputError(f"ALBERT config file {path}: {e}") from None

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Write albert_config.json atomically (temp file, then rename)."""
        write_text_atomic(path, self.to_json_string())

    def replace(self, **changes) -> AlbertConfig:
        """A copy with some fields changed (validated again)."""
        d = self.to_dict()
        d.update(changes)
        return AlbertConfig.from_dict(d)

    # ---- presets -----------------------------------------------------------------------------
    @classmethod
    def from_preset(cls, name: str, **overrides) -> AlbertConfig:
        """Config of a released model: albert_{base,large,xlarge,xxlarge}_{v1,v2}."""
        if name not in PRESETS:
            raise ValueError(f"Unknown ALBERT preset {name!r}; known presets: {sorted(PRESETS)}")
        d = dict(PRESETS[name])
        d.update(overrides)
        return cls.from_dict(d)

    @staticmethod
    def presets() -> list[str]:
        return sorted(PRESETS)


def _brightmart_layout(known: dict, ln_type) -> dict:
    """A brightmart/albert_zh config (it has `ln_type`): its layout is Google's with
    embedding_size = hidden_size once the factorized word table is folded
    (formats/albert_zh.py), so embedding_size reads as hidden_size. Its pre-LN variant
    computes what Google's post-LN blocks cannot: refused."""
    if ln_type != "postln":
        raise InputError(
            f"AlbertConfig: ln_type {ln_type!r} (brightmart/albert_zh's pre-LN "
            "blocks, only in its withdrawn xlarge of 2019-10-07) is not supported: "
            "ALBERT's blocks are post-LN; use a release whose config says \"postln\""
        )
    return {**known, "embedding_size": known.get("hidden_size", 4096)}


def _check_known_key(key: str, names) -> None:
    """A key the model does not read must be one of Google's released-but-unused keys."""
    if key in KNOWN_UNUSED_KEYS or key in BRIGHTMART_KEYS:
        return
    close = difflib.get_close_matches(key, sorted(names) + list(KNOWN_UNUSED_KEYS), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {sorted(names)}"
    raise InputError(f"AlbertConfig: unknown key {key!r}{hint}")


_SIZES = {  # hidden, layers, heads, intermediate
    "base": (768, 12, 12, 3072),
    "large": (1024, 24, 16, 4096),
    "xlarge": (2048, 24, 16, 8192),
    "xxlarge": (4096, 12, 64, 16384),
}


def _preset(size: str, version: str) -> dict[str, Any]:
    hidden, layers, heads, intermediate = _SIZES[size]
    dropout = 0.1 if version == "v1" and size != "xxlarge" else 0.0
    return {
        "vocab_size": 30000,
        "embedding_size": 128,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_hidden_groups": 1,
        "num_attention_heads": heads,
        "intermediate_size": intermediate,
        "inner_group_num": 1,
        "down_scale_factor": 1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": dropout,
        "attention_probs_dropout_prob": dropout,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
    }


PRESETS = {f"albert_{s}_{v}": _preset(s, v) for s in _SIZES for v in ("v1", "v2")}
