"""transformers' `config.json` for ALBERT ⇄ an AlbertConfig and the albert_tf model class of its
`architectures` entry (AlbertForSequenceClassification ⇄ AlbertClassifier with its labels, ...).
The weights themselves are mapped in `huggingface`."""

from __future__ import annotations

import numpy as np

from albert_tf.core.config import SIZE_FIELDS, AlbertConfig
from albert_tf.modeling.albert_model import AlbertModel, AlbertPretrainer
from albert_tf.modeling.finetuning_models import (
    AlbertClassifier,
    AlbertMultipleChoice,
    AlbertTokenClassifier,
)
from albert_tf.modeling.squad_models import AlbertSquadV1

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
    """(transformers architecture, extra config keys) of an albert_tf model."""
    if isinstance(model, AlbertPretrainer):
        return "AlbertForPreTraining", {}
    if isinstance(model, AlbertTokenClassifier):
        labels = getattr(model, "label_names", None) or [
            f"LABEL_{i}" for i in range(model.num_labels)
        ]
        return "AlbertForTokenClassification", {
            "id2label": {str(i): name for i, name in enumerate(labels)},
            "label2id": {name: i for i, name in enumerate(labels)},
            "classifier_dropout_prob": model.dropout_prob,
        }
    if isinstance(model, AlbertClassifier):
        labels = getattr(model, "label_names", None) or [
            f"LABEL_{i}" for i in range(model.num_labels)
        ]
        extra = {
            "id2label": {str(i): name for i, name in enumerate(labels)},
            "label2id": {name: i for i, name in enumerate(labels)},
            "classifier_dropout_prob": model.dropout_prob,
        }
        if model.is_regression:
            extra["problem_type"] = "regression"
        elif getattr(model, "multi_label", False):
            extra["problem_type"] = "multi_label_classification"
        return "AlbertForSequenceClassification", extra
    if isinstance(model, AlbertMultipleChoice):
        return "AlbertForMultipleChoice", {"classifier_dropout_prob": model.dropout_prob}
    if isinstance(model, AlbertSquadV1):
        return "AlbertForQuestionAnswering", {}
    if isinstance(model, AlbertModel):
        return "AlbertModel", {}
    return "AlbertModel", {}  # a task model whose head transformers has no class for


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
    `AlbertForQuestionAnswering` (two labels) an AlbertSquadV1; anything else an AlbertModel.

    Args:
        data: dict. The parsed `config.json` (for `architectures`, labels, dropout).
        config: `AlbertConfig`. The model's configuration.

    Returns:
        The new albert_tf model (randomly initialized).
    """
    arch = (data.get("architectures") or ["AlbertModel"])[0]
    dropout = data.get("classifier_dropout_prob", 0.1)
    if arch in ("AlbertForPreTraining", "AlbertForMaskedLM"):
        return AlbertPretrainer(config)
    if arch == "AlbertForSequenceClassification":
        n = _num_labels(data)
        regression = data.get("problem_type") == "regression" or n == 1
        multi = data.get("problem_type") == "multi_label_classification"
        return AlbertClassifier(
            config,
            n,
            dropout_prob=dropout,
            is_regression=regression,
            multi_label=multi,
            label_names=None if regression else _label_names(data, n),
        )
    if arch == "AlbertForMultipleChoice":
        return AlbertMultipleChoice(config, dropout_prob=dropout)
    if arch == "AlbertForTokenClassification":
        n = _num_labels(data)
        names = [data["id2label"][str(i)] for i in range(n)] if data.get("id2label") else None
        return AlbertTokenClassifier(config, n, dropout_prob=dropout, label_names=names)
    if arch == "AlbertForQuestionAnswering" and _num_labels(data) == 2:
        return AlbertSquadV1(config)
    return AlbertModel(config)
