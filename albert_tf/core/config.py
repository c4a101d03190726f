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
CONFIG_FILE = "albert_config.json"  # a model's config file: Google's releases, run folders
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


# The sizes (positive integers) that, with `sharing`, decide a checkpoint's variables.
SIZE_FIELDS = (
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


@dataclasses.dataclass
class AlbertConfig:
    """The hyperparameters of an ALBERT model, with the key names of Google's albert_config.json.

    The defaults are Google's albert_xxlarge shape; only `vocab_size` is required. A config is
    checked when it is built (`validate`), so a typo or an impossible shape fails at once rather
    than deep inside the model. `from_json_file` reads a released albert_config.json,
    `from_preset` builds one of the eight released shapes, and `to_dict` / `to_json_file` write
    Google's keys back, so a released config round-trips unchanged.

    Keys of a released config that the model never reads (`KNOWN_UNUSED_KEYS`, such as
    `net_structure_type`, and the extra keys of brightmart/albert_zh configs) are kept in
    `extra`; any other unknown key is an error, since a misspelt key would otherwise be silently
    ignored.

    Args:
        vocab_size: int. The number of tokens in the vocabulary (30000 for the English
            releases). Required.
        embedding_size: int. The width E of the factorized token embeddings (paper section
            3.1). Default 128.
        hidden_size: int. The width H of the Transformer layers and the pooler. Must be
            divisible by `num_attention_heads`. Default 4096.
        num_hidden_layers: int. The number of Transformer layers L (layer applications; with
            sharing, fewer distinct blocks). Default 12.
        num_hidden_groups: int. The number of groups of shared parameters; layer `i` uses group
            `int(i / num_hidden_layers * num_hidden_groups)`. At most `num_hidden_layers`.
            Default 1 (every layer shares one block).
        num_attention_heads: int. The number of attention heads. Default 64.
        intermediate_size: int. The width of the feed-forward layer. Default 16384.
        inner_group_num: int. The number of Transformer blocks applied one after another in
            each layer. Default 1.
        down_scale_factor: int. Kept from Google's configs for round-tripping; the model does
            not read it. Default 1.
        hidden_act: str. The feed-forward activation: "gelu" (the tanh approximation, as
            Google's code computes it), "gelu_new" (the same function, Hugging Face's name),
            "gelu_exact" (the erf form), "relu", "tanh" or "linear". Default "gelu".
        hidden_dropout_prob: float in [0, 1). Dropout rate of the embeddings and of the
            Transformer sublayer outputs. Default 0.0 (the v2 releases).
        attention_probs_dropout_prob: float in [0, 1). Dropout rate of the attention
            probabilities. Default 0.0.
        max_position_embeddings: int. The longest sequence the position table holds.
            Default 512.
        type_vocab_size: int. The number of segment ids (token types). Default 2.
        initializer_range: float > 0. The standard deviation of the truncated-normal weight
            initializer. Default 0.02.
        sharing: str. Which parameters the layers share, for the paper's Table 4 ablation:
            "all" (Google's released layout; combines with `num_hidden_groups`), "attention"
            (attention shared, a feed-forward layer per layer), "ffn" (feed-forward shared,
            attention per layer) or "none" (nothing shared; Google writes this as
            `num_hidden_groups == num_hidden_layers`, which "none" sets). Default "all".
        recompute_grad: bool. An albert_tf option to save training memory: the activations of
            each shared block are recomputed in the backward pass instead of kept (the same
            gradients, less memory, more time). Default False.
        extra: dict. Keys of a released config that the model does not read, kept so the
            config writes back unchanged. Default empty.

    Raises:
        ValueError: when a field is out of range (see `validate`), or when `sharing="none"` is
            combined with a `num_hidden_groups` other than 1 or `num_hidden_layers`.

    Example:

    >>> import albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> config.head_size
    8
    >>> config.replace(sharing="none").num_hidden_groups
    2

    Read a released albert_config.json, or build a released shape by name:

    >>> tiny = albert_tf.AlbertConfig.from_json_file(
    ...     "tests/data/fixtures/albert_tiny/albert_config.json")
    >>> tiny.vocab_size, tiny.hidden_size, tiny.num_hidden_layers
    (1000, 32, 4)
    >>> base = albert_tf.AlbertConfig.from_preset("albert_base_v2")
    >>> base.hidden_size, base.num_attention_heads, base.intermediate_size
    (768, 12, 3072)

    A misspelt key is an error that names the closest known key:

    >>> albert_tf.AlbertConfig.from_dict({"vocab_size": 100, "hiden_size": 16})
    Traceback (most recent call last):
    ...
    albert_tf.core.errors.InputError: AlbertConfig: unknown key ... did you mean 'hidden_size'?
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
        """Checks every field, and names the first one that makes this config unusable.

        Called when the config is built; call it again after changing a field in place.

        Raises:
            ValueError: when a size is not a positive integer, `hidden_size` is not divisible by
                `num_attention_heads`, `num_hidden_groups` exceeds `num_hidden_layers`,
                `hidden_act` or `sharing` is unknown, `recompute_grad` is not a bool, a dropout
                rate is outside [0, 1) or `initializer_range` is not positive.
        """
        for name in SIZE_FIELDS:
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
        """The width of one attention head: `hidden_size // num_attention_heads`."""
        return self.hidden_size // self.num_attention_heads

    def group_of_layer(self, layer: int) -> int:
        """The parameter group that a layer uses, as Google's code assigns it.

        Groups cover contiguous runs of layers: `int(layer / num_hidden_layers *
        num_hidden_groups)`.

        Args:
            layer: int. The layer index, from 0 to `num_hidden_layers - 1`.

        Returns:
            int: the group index, from 0 to `num_hidden_groups - 1`.

        Example:

        >>> import albert_tf
        >>> config = albert_tf.AlbertConfig(vocab_size=100, num_hidden_layers=4,
        ...                                 num_hidden_groups=2)
        >>> [config.group_of_layer(i) for i in range(4)]
        [0, 0, 1, 1]
        """
        return int(layer / self.num_hidden_layers * self.num_hidden_groups)

    # ---- (de)serialisation in Google's names ------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AlbertConfig:
        """Builds a config from a dict with Google's albert_config.json keys.

        Keys that released configs carry but the model does not read go to `extra`. A
        brightmart/albert_zh config (it has `ln_type`) is read with `embedding_size` set to
        `hidden_size`, since its factorized word table is folded on conversion.

        Args:
            d: dict. The config, in Google's key names; must hold `vocab_size`.

        Returns:
            AlbertConfig: the config.

        Raises:
            InputError: when `vocab_size` is missing, a key is unknown (the message names the
                closest known key), or `ln_type` is not "postln" (brightmart's pre-LN blocks).
            ValueError: when a value is out of range (see `validate`).
        """
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
        """The config as a dict with Google's albert_config.json keys.

        `sharing` and `recompute_grad` (albert_tf additions) are written only when they differ
        from their defaults ("all", False), and the keys kept in `extra` are written back, so a
        released config round-trips unchanged.

        Returns:
            dict: the config, in Google's key names.
        """
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        if d["sharing"] == "all":
            del d["sharing"]
        if not d["recompute_grad"]:
            del d["recompute_grad"]
        d.update(copy.deepcopy(self.extra))
        return d

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> AlbertConfig:
        """Reads an albert_config.json file (Google's format, local or `gs://`).

        Args:
            path: str or os.PathLike. The JSON file.

        Returns:
            AlbertConfig: the config.

        Raises:
            FileNotFoundError: when the file does not exist.
            InputError: when the file is not a valid JSON object or the config in it is not
                valid; the message names the file.
        """
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
        """The config as albert_config.json text (`to_dict`, keys sorted, indented).

        Returns:
            str: the JSON text, ending with a newline.
        """
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Writes the config as an albert_config.json file.

        A local file is written under a temporary name and then renamed, so a reader never sees
        it partly written (a `gs://` object appears whole when its upload closes).

        Args:
            path: str or os.PathLike. The file to write.
        """
        write_text_atomic(path, self.to_json_string())

    def replace(self, **changes) -> AlbertConfig:
        """A copy of the config with some fields changed, validated again.

        Args:
            **changes: The fields to change, by name (Google's key names).

        Returns:
            AlbertConfig: the new config; this one is unchanged.
        """
        d = self.to_dict()
        d.update(changes)
        return AlbertConfig.from_dict(d)

    # ---- presets -----------------------------------------------------------------------------
    @classmethod
    def from_preset(cls, name: str, **overrides) -> AlbertConfig:
        """The config of one of Google's released models.

        The v1 releases have dropout 0.1 (but xxlarge); the v2 releases have none.

        Args:
            name: str. `albert_{base,large,xlarge,xxlarge}_{v1,v2}`; see `presets()`.
            **overrides: Fields to change from the released values, by name.

        Returns:
            AlbertConfig: the config.

        Raises:
            ValueError: when `name` is not a known preset.
        """
        if name not in PRESETS:
            raise ValueError(f"Unknown ALBERT preset {name!r}; known presets: {sorted(PRESETS)}")
        d = dict(PRESETS[name])
        d.update(overrides)
        return cls.from_dict(d)

    @staticmethod
    def presets() -> list[str]:
        """The names `from_preset` accepts.

        Returns:
            list of str: the preset names, sorted.
        """
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
