"""transformers' `config.json` for ALBERT ⇄ an AlbertConfig and the albert_tf model class of its
`architectures` entry (AlbertForSequenceClassification ⇄ AlbertClassifier with its labels, ...).
The weights themselves are mapped in `huggingface`."""

from __future__ import annotations

import numpy as np

from albert_tf.core.config import SIZE_FIELDS, AlbertConfig
from albert_tf.modeling.model_kinds import get_kind, kind_for_huggingface, kind_of

ACT_TO_HF = {
    "gelu": "gelu_new",
    "gelu_new": "gelu_new",
    "gelu_exact": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}
ACT_FROM_HF = {
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu": "gelu_exact",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}


# ---- configs ----------------------------------------------------------------------------------
# config keys transformers' AlbertConfig shares with albert_tf's, same names and meaning
SHARED_KEYS = (
    *SIZE_FIELDS,
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "initializer_range",
)


def _architecture(model):
    """(transformers architecture, extra config keys) of an albert_tf model (its kind's
    `huggingface` name; a kind transformers has no class for is written as its encoder)."""
    kind = kind_of(model)
    extra = {}
    if kind.sized_by_head:
        labels = getattr(model, "label_names", None) or [
            f"LABEL_{i}" for i in range(model.num_labels)
        ]
        extra["id2label"] = {str(i): name for i, name in enumerate(labels)}
        extra["label2id"] = {name: i for i, name in enumerate(labels)}
    if kind.pooled:
        extra["classifier_dropout_prob"] = model.dropout_prob
    if kind.huggingface_problem_type is not None:
        extra["problem_type"] = kind.huggingface_problem_type
    if kind.huggingface is None:
        return "AlbertModel", {}
    return kind.huggingface, extra


def hf_config(model) -> dict:
    """Build transformers' `config.json` contents for an albert_tf model.

    The architecture follows the model's class (`AlbertForPreTraining`,
    `AlbertForSequenceClassification`, ...). albert_tf's "gelu" (tanh) becomes transformers'
    "gelu_new"; albert_tf's "gelu_exact" becomes transformers' "gelu".

    Args:
        model: an albert_tf model.

    Returns:
        dict. The config, ready for `json.dumps`.

    Raises:
        ValueError: when the config's `sharing` is not "all" (transformers shares whole
            blocks only).
    """
    config = model.config
    if config.sharing != "all":
        raise ValueError(
            f"transformers' ALBERT shares whole blocks only; sharing={config.sharing!r} "
            "cannot be exported"
        )
    arch, extra = _architecture(model)
    return {
        "architectures": [arch],
        "model_type": "albert",
        **{k: getattr(config, k) for k in SHARED_KEYS},
        "hidden_act": ACT_TO_HF[config.hidden_act],
        "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
        "bos_token_id": 2,
        "eos_token_id": 3,
        "tie_word_embeddings": True,
        **extra,
    }


def config_from_hf(data: dict, path="config.json"):
    """Build the AlbertConfig of a transformers `config.json`.

    Keys missing from `data` (except `vocab_size`, which is required) take AlbertConfig's
    defaults (Google's xxlarge sizes).

    Args:
        data: dict. The parsed `config.json`.
        path: str. The file's name, for error messages. Defaults to "config.json".

    Returns:
        `AlbertConfig`.

    Raises:
        ValueError: when `model_type` is not "albert", `position_embedding_type` is not
            "absolute", `layer_norm_eps` is not 1e-12, `hidden_act` is unsupported, or
            `vocab_size` is missing (the message names `path` and the key), or when the
            values do not make a valid AlbertConfig.

    Example:

    >>> from albert_tf.formats.huggingface_config import config_from_hf
    >>> config = config_from_hf({"model_type": "albert", "vocab_size": 100, "hidden_size": 16,
    ...                          "num_attention_heads": 2, "hidden_act": "gelu_new"})
    >>> config.vocab_size, config.hidden_size, config.hidden_act
    (100, 16, 'gelu')
    """
    if data.get("model_type") != "albert":
        raise ValueError(f"{path}: model_type is {data.get('model_type')!r}, not 'albert'")
    if data.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            f"{path}: position_embedding_type {data['position_embedding_type']!r} "
            "is not supported (only 'absolute', as Google's ALBERT)"
        )
    if not np.isclose(data.get("layer_norm_eps", 1e-12), 1e-12, rtol=1e-3, atol=0):
        raise ValueError(
            f"{path}: layer_norm_eps {data['layer_norm_eps']} differs from ALBERT's "
            "1e-12, which albert_tf's LayerNorm uses"
        )
    act = data.get("hidden_act", "gelu_new")
    if act not in ACT_FROM_HF:
        raise ValueError(
            f"{path}: hidden_act {act!r} is not supported; use one of {sorted(ACT_FROM_HF)}"
        )
    defaults = AlbertConfig(vocab_size=1)
    fields = SHARED_KEYS
    values = {k: data.get(k, getattr(defaults, k)) for k in fields}
    if "vocab_size" not in data:
        raise ValueError(f"{path}: no 'vocab_size'")
    return AlbertConfig(**values, hidden_act=ACT_FROM_HF[act])


def _num_labels(data):
    return len(data["id2label"]) if data.get("id2label") else int(data.get("num_labels", 2))


def _label_names(data, n):
    """config.json's id2label as a list, or None for transformers' placeholders LABEL_i."""
    id2label = data.get("id2label") or {}
    names = [id2label.get(str(i), id2label.get(i)) for i in range(n)]
    if None in names or names == [f"LABEL_{i}" for i in range(n)]:
        return None
    return [str(x) for x in names]


def model_for_hf_config(data: dict, config):
    """Build the albert_tf model that matches a transformers config's `architectures`.

    `AlbertForPreTraining` and `AlbertForMaskedLM` give an AlbertPretrainer,
    `AlbertForSequenceClassification` an AlbertClassifier, `AlbertForMultipleChoice` an
    AlbertMultipleChoice, `AlbertForTokenClassification` an AlbertTokenClassifier and
    `AlbertForQuestionAnswering` (two labels) an AlbertSquadV1 (`modeling.model_kinds` holds
    these names); an architecture albert_tf has no class for gives an AlbertModel (the
    encoder: the loader reports the head's tensors as unused).

    Args:
        data: dict. The parsed `config.json` (for `architectures`, labels, dropout).
        config: `AlbertConfig`. The model's configuration.

    Returns:
        The new albert_tf model (randomly initialized).
    """
    arch = (data.get("architectures") or ["AlbertModel"])[0]
    n = _num_labels(data)
    kind = kind_for_huggingface(arch, data.get("problem_type"), n)
    if kind is None:  # a head albert_tf has no class for: its encoder, the head's tensors unused
        kind = get_kind("encoder")
    kwargs = {}
    if kind.pooled:
        kwargs["dropout_prob"] = data.get("classifier_dropout_prob", 0.1)
    if not kind.sized_by_head:
        return kind.build(config, **kwargs)
    if kind.name == "token_classifier":
        names = [data["id2label"][str(i)] for i in range(n)] if data.get("id2label") else None
    else:
        names = None if kind.name == "regression" else _label_names(data, n)
    return kind.build(config, n, label_names=names, **kwargs)
