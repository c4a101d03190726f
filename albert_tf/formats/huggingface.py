"""Hugging Face ALBERT folders (`config.json`, `model.safetensors`, `spiece.model`,
`tokenizer.json`) ⇄ albert_tf models, both ways, through the safetensors NumPy API: no PyTorch
or transformers at run time.

Names follow transformers' ALBERT state dict (`albert.embeddings...`, `albert.encoder.
albert_layer_groups.{g}.albert_layers.{i}...`, `predictions.*`, `sop_classifier.classifier.*`,
`classifier.*`, `qa_outputs.*`); torch Linear weights are [out, in], so Dense kernels are
transposed. Heads without a transformers counterpart (SQuAD v2) are reported as left out.
"""

from __future__ import annotations

import json
import os

import numpy as np

from albert_tf.core import fileio
from albert_tf.core.config import AlbertConfig
from albert_tf.formats.common import (
    PROJECTION,
    ExportReport,
    check_identity_projection,
    copy_spm_model,
    identity_projection,
    rename,
)
from albert_tf.formats.hf_tokenizer import tokenizer_json
from albert_tf.formats.tf1 import assign_google_named
from albert_tf.modeling.albert_model import AlbertModel, AlbertPretrainer
from albert_tf.modeling.finetuning_models import (
    AlbertClassifier,
    AlbertMultipleChoice,
    AlbertTokenClassifier,
)
from albert_tf.modeling.names import original_variable_map
from albert_tf.modeling.squad_models import AlbertSquadV1

WEIGHTS_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
PREFIX = "albert."

_BLOCK = r"bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/"
_HF_BLOCK = r"albert.encoder.albert_layer_groups.\1.albert_layers.\2."
# Google scope (the name less its last part) → transformers module path.
SCOPE_RULES = (
    (r"bert/embeddings", "albert.embeddings"),
    (r"bert/embeddings/LayerNorm", "albert.embeddings.LayerNorm"),
    (r"bert/encoder/embedding_hidden_mapping_in", "albert.encoder.embedding_hidden_mapping_in"),
    (_BLOCK + r"attention_1/self/(query|key|value)", _HF_BLOCK + r"attention.\3"),
    (_BLOCK + r"attention_1/output/dense", _HF_BLOCK + "attention.dense"),
    (_BLOCK + r"LayerNorm", _HF_BLOCK + "attention.LayerNorm"),
    (_BLOCK + r"ffn_1/intermediate/dense", _HF_BLOCK + "ffn"),
    (_BLOCK + r"ffn_1/intermediate/output/dense", _HF_BLOCK + "ffn_output"),
    (_BLOCK + r"LayerNorm_1", _HF_BLOCK + "full_layer_layer_norm"),
    (r"bert/pooler/dense", "albert.pooler"),
    (r"cls/predictions/transform/dense", "predictions.dense"),
    (r"cls/predictions/transform/LayerNorm", "predictions.LayerNorm"),
    (r"cls/predictions", "predictions"),
    (r"cls/seq_relationship", "sop_classifier.classifier"),
    (r"cls/squad", "qa_outputs"),
    (r"", "classifier"),  # Google's root-scope classifier / multiple-choice head
)
# Google's last name part → the torch parameter name.
LEAVES = {
    "kernel": "weight",
    "bias": "bias",
    "gamma": "weight",
    "beta": "bias",
    "output_weights": "weight",
    "output_bias": "bias",
    "word_embeddings": "word_embeddings.weight",
    "position_embeddings": "position_embeddings.weight",
    "token_type_embeddings": "token_type_embeddings.weight",
}
# Tensors of a transformers state dict that are not weights of their own.
IGNORED = (
    "albert.embeddings.position_ids",
    "albert.embeddings.token_type_ids",
    "predictions.decoder.weight",
    "predictions.decoder.bias",
)

# albert_tf hidden_act → transformers hidden_act ("gelu" there is the exact erf form).
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


# ---- names ------------------------------------------------------------------------------------
def hf_name(google_name: str) -> str | None:
    """The transformers state-dict name of a Google-named variable, or None if it has none."""
    scope, _, leaf = google_name.rpartition("/")
    module = rename(scope, SCOPE_RULES)
    if module is None or leaf not in LEAVES:
        return None
    if (scope == "bert/embeddings") != leaf.endswith("_embeddings"):
        return None
    if scope == "" and leaf not in ("output_weights", "output_bias"):
        return None
    return f"{module}.{LEAVES[leaf]}"


def _to_hf(google_name, value):
    value = np.asarray(value, dtype="float32")
    return np.ascontiguousarray(value.T) if google_name.endswith("/kernel") else value


def _from_hf(google_name, value):
    return np.asarray(value).T if google_name.endswith("/kernel") else np.asarray(value)


# ---- configs ----------------------------------------------------------------------------------
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
        extra = {
            "id2label": {str(i): f"LABEL_{i}" for i in range(model.num_labels)},
            "label2id": {f"LABEL_{i}": i for i in range(model.num_labels)},
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
    """transformers' config.json for an albert_tf model; refuses what transformers cannot run."""
    config = model.config
    if config.sharing != "all":
        raise ValueError(
            f"transformers' ALBERT shares whole blocks only; sharing={config.sharing!r} "
            "cannot be exported"
        )
    arch, extra = _architecture(model)
    keys = (
        "vocab_size",
        "embedding_size",
        "hidden_size",
        "num_hidden_layers",
        "num_hidden_groups",
        "num_attention_heads",
        "intermediate_size",
        "inner_group_num",
        "hidden_dropout_prob",
        "attention_probs_dropout_prob",
        "max_position_embeddings",
        "type_vocab_size",
        "initializer_range",
    )
    return {
        "architectures": [arch],
        "model_type": "albert",
        **{k: getattr(config, k) for k in keys},
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
    """The AlbertConfig of a transformers config.json dict; errors name `path` and the key."""
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
    fields = (
        "vocab_size",
        "embedding_size",
        "hidden_size",
        "num_hidden_layers",
        "num_hidden_groups",
        "num_attention_heads",
        "intermediate_size",
        "inner_group_num",
        "hidden_dropout_prob",
        "attention_probs_dropout_prob",
        "max_position_embeddings",
        "type_vocab_size",
        "initializer_range",
    )
    values = {k: data.get(k, getattr(defaults, k)) for k in fields}
    if "vocab_size" not in data:
        raise ValueError(f"{path}: no 'vocab_size'")
    return AlbertConfig(**values, hidden_act=ACT_FROM_HF[act])


def _num_labels(data):
    return len(data["id2label"]) if data.get("id2label") else int(data.get("num_labels", 2))


def model_for_hf_config(data: dict, config):
    """The albert_tf model matching config.json's `architectures` (AlbertModel if none fits)."""
    arch = (data.get("architectures") or ["AlbertModel"])[0]
    dropout = data.get("classifier_dropout_prob", 0.1)
    if arch in ("AlbertForPreTraining", "AlbertForMaskedLM"):
        return AlbertPretrainer(config)
    if arch == "AlbertForSequenceClassification":
        n = _num_labels(data)
        regression = data.get("problem_type") == "regression" or n == 1
        multi = data.get("problem_type") == "multi_label_classification"
        return AlbertClassifier(
            config, n, dropout_prob=dropout, is_regression=regression, multi_label=multi
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


# ---- export -----------------------------------------------------------------------------------
def hf_state(model) -> tuple[dict, list]:
    """({transformers name: float32 array}, Google names left out) for an albert_tf model."""
    albert = model if hasattr(model, "embedding") else model.albert
    names = {g: np.asarray(v) for g, v in original_variable_map(model).items()}
    if albert.embedding.projection is None:  # transformers always projects; identity is exact
        names.update(identity_projection(albert.config.hidden_size))
    tensors, left_out = {}, []
    for google, value in names.items():
        name = hf_name(google)
        if name is None:
            left_out.append(google)
        else:
            tensors[name] = _to_hf(google, value)
    return tensors, sorted(left_out)


def _tokenizer_config(max_length):
    """tokenizer_config.json: AutoTokenizer loads tokenizer.json as it is (transformers'
    AlbertTokenizer class would swap in its own normalizer, which rewrites `` and '' to " as
    Google's ALBERT does not), with the segment ids ALBERT's pairs need."""
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_input_names": ["input_ids", "token_type_ids", "attention_mask"],
        "do_lower_case": True,
        "remove_space": True,
        "keep_accents": False,
        "bos_token": "[CLS]",
        "eos_token": "[SEP]",
        "unk_token": "<unk>",
        "sep_token": "[SEP]",
        "pad_token": "<pad>",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
        "model_max_length": max_length,
    }


def export_huggingface(model, folder, spm_model_file=None, *, exclude=()) -> ExportReport:
    """Write `config.json` and `model.safetensors` (and, with `spm_model_file`, `spiece.model`,
    `tokenizer_config.json` and `tokenizer.json`, formats/hf_tokenizer.py) that transformers'
    ALBERT classes load with from_pretrained.
    Google names in `exclude` (heads never trained) are left out; a pretrainer without its
    sentence-order head is written as an `AlbertForMaskedLM`."""
    # deferred: only the Hugging Face path needs safetensors
    from safetensors.numpy import save

    folder = os.fspath(folder)
    config = hf_config(model)
    tensors, left_out = hf_state(model)
    excluded = sorted(g for g in set(exclude) if hf_name(g) in tensors)
    for google in excluded:
        del tensors[hf_name(google)]
    if excluded and isinstance(model, AlbertPretrainer):
        has_mlm = "predictions.bias" in tensors
        config["architectures"] = ["AlbertForMaskedLM" if has_mlm else "AlbertModel"]
    left_out = sorted(left_out + excluded)
    config_path = fileio.join(folder, "config.json")
    fileio.remove(config_path)  # written last: a reader never pairs an old config with new weights
    # bytes in memory, written by the file layer: any filesystem, and the umask's mode (save_file
    # would make a 0600 file)
    fileio.write_bytes(fileio.join(folder, WEIGHTS_FILE), save(tensors, metadata={"format": "pt"}))
    if spm_model_file is not None:
        copy_spm_model(spm_model_file, folder, "spiece.model")
        fileio.write_text(
            fileio.join(folder, "tokenizer_config.json"),
            json.dumps(_tokenizer_config(model.config.max_position_embeddings), indent=2) + "\n",
        )
        # the fast tokenizer's own file: transformers builds none without sentencepiece+protobuf
        fileio.write_text(fileio.join(folder, "tokenizer.json"), tokenizer_json(spm_model_file))
    fileio.write_text(config_path, json.dumps(config, indent=2) + "\n")
    written = sorted(set(original_variable_map(model)) - set(left_out))
    return ExportReport(folder, written, left_out)


# ---- import -----------------------------------------------------------------------------------
def is_huggingface_folder(path) -> bool:
    """A folder holding transformers' config.json and safetensors weights."""
    path = os.fspath(path)
    return fileio.isfile(fileio.join(path, "config.json")) and (
        fileio.isfile(fileio.join(path, WEIGHTS_FILE))
        or fileio.isfile(fileio.join(path, INDEX_FILE))
    )


def read_hf_tensors(folder) -> dict:
    """All tensors of a folder's model.safetensors (or of the shards its index names), with the
    `albert.` prefix added when the file is a bare AlbertModel's."""
    folder = os.fspath(folder)
    single = fileio.join(folder, WEIGHTS_FILE)
    if fileio.isfile(single):
        files = [single]
    else:
        index = fileio.read_json(fileio.join(folder, INDEX_FILE))
        files = [fileio.join(folder, s) for s in sorted(set(index["weight_map"].values()))]
    tensors = {}
    for path in files:
        try:
            tensors.update(_load_safetensors(path))
        except Exception as e:  # safetensors raises its own error types
            raise ValueError(f"cannot read safetensors file {path}: {e}") from None
    if not any(n.startswith(PREFIX) for n in tensors):
        tensors = {
            (PREFIX + n if n.split(".")[0] in ("embeddings", "encoder", "pooler") else n): v
            for n, v in tensors.items()
        }
    return tensors


def _load_safetensors(path) -> dict:
    """One safetensors file's tensors: memory-mapped when local, read whole when remote."""
    # deferred: only the Hugging Face path needs safetensors
    from safetensors.numpy import load, load_file

    return load(fileio.read_bytes(path)) if fileio.is_remote(path) else load_file(path)


def _read_config(folder):
    path = fileio.join(folder, "config.json")
    try:
        return fileio.read_json(path), path
    except FileNotFoundError:
        raise FileNotFoundError(f"Hugging Face config not found: {path}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e}") from None


def load_huggingface(folder, model=None):
    """Read a transformers ALBERT folder into an albert_tf model (built from its config.json and
    `architectures` unless `model` is given). Returns (model, LoadReport)."""
    folder = os.fspath(folder)
    if not fileio.isdir(folder):
        raise FileNotFoundError(f"Hugging Face model folder not found: {folder}")
    data, config_path = _read_config(folder)
    if model is None:
        model = model_for_hf_config(data, config_from_hf(data, config_path))
    tensors = read_hf_tensors(folder)
    if "predictions.bias" not in tensors and "predictions.decoder.bias" in tensors:
        tensors["predictions.bias"] = tensors["predictions.decoder.bias"]
    albert = model if hasattr(model, "embedding") else model.albert
    by_google = {g: hf_name(g) for g in original_variable_map(model)}
    if albert.embedding.projection is None:
        kernel, bias = (tensors.get(hf_name(n)) for n in PROJECTION)
        if kernel is not None:
            check_identity_projection(kernel, bias, folder)
    available = {g: h for g, h in by_google.items() if h in tensors}
    shapes = {
        g: tuple(reversed(tensors[h].shape)) if g.endswith("/kernel") else tensors[h].shape
        for g, h in available.items()
    }
    report = assign_google_named(
        model,
        shapes,
        lambda g: _from_hf(g, tensors[available[g]]),
        folder,
        optional=("bert/pooler/dense/kernel", "bert/pooler/dense/bias"),
    )
    mapped = set(available.values()) | {hf_name(n) for n in PROJECTION}
    report.ignored = sorted(n for n in tensors if n in IGNORED)
    report.unused = sorted(n for n in tensors if n not in mapped and n not in IGNORED)
    return model, report
