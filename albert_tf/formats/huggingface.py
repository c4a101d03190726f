"""Convert between Hugging Face ALBERT folders and albert_tf models, in both directions.

A Hugging Face folder holds `config.json`, `model.safetensors` and `spiece.model`. Files are read
and written with the safetensors NumPy API, so neither PyTorch nor transformers is needed at run
time. Names follow transformers' ALBERT state dict (`albert.embeddings...`,
`albert.encoder.albert_layer_groups.{g}.albert_layers.{i}...`, `predictions.*`,
`sop_classifier.classifier.*`, `classifier.*`, `qa_outputs.*`). PyTorch Linear weights are
stored [out, in], so Dense kernels are transposed. Heads with no transformers counterpart
(SQuAD v2) are reported as left out.
"""

from __future__ import annotations

import json
import os

import numpy as np

from albert_tf.core import fileio
from albert_tf.formats.common import (
    PROJECTION,
    ExportReport,
    check_identity_projection,
    copy_spm_model,
    identity_projection,
    rename,
)
from albert_tf.formats.hf_tokenizer import tokenizer_json
from albert_tf.formats.huggingface_config import config_from_hf, hf_config, model_for_hf_config
from albert_tf.formats.tf1 import assign_google_named
from albert_tf.modeling.albert_model import AlbertPretrainer
from albert_tf.modeling.model_kinds import HUGGINGFACE_MASKED_LM, get_kind
from albert_tf.modeling.names import original_variable_map

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
# ---- names ------------------------------------------------------------------------------------
def hf_name(google_name: str) -> str | None:
    """Give the transformers state-dict name of a Google-named variable.

    Args:
        google_name: str. A Google name, e.g. `bert/pooler/dense/kernel`.

    Returns:
        str or None. The transformers name, or None when transformers has no place for it.

    Example:

    >>> from albert_tf.formats.huggingface import hf_name
    >>> hf_name("bert/pooler/dense/kernel")
    'albert.pooler.weight'
    >>> hf_name("bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/bias")
    'albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.bias'
    """
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


# ---- export -----------------------------------------------------------------------------------
def hf_state(model) -> tuple[dict, list]:
    """Give an albert_tf model's weights as a transformers state dict.

    Dense kernels are transposed to PyTorch's [out, in]. A model with embedding_size equal to
    hidden_size gets an identity embedding projection, which transformers always has.

    Args:
        model: an albert_tf model.

    Returns:
        tuple `(tensors, left_out)`: transformers name -> float32 array, and the sorted Google
        names that have no transformers counterpart.
    """
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
    """Save an albert_tf model as a Hugging Face folder.

    Writes `config.json` and `model.safetensors` (and, with `spm_model_file`, `spiece.model`,
    `tokenizer_config.json` and `tokenizer.json`, see `formats/hf_tokenizer.py`), which
    transformers' ALBERT classes load with `from_pretrained`. Neither PyTorch nor transformers
    is needed. `config.json` is written last, so a reader never pairs an old config with new
    weights. Heads with no transformers counterpart (SQuAD v2) are left out and listed in the
    report; a pretrainer without its sentence-order head is written as `AlbertForMaskedLM`.

    Args:
        model: an albert_tf model whose config has `sharing="all"`.
        folder: str or path-like. The folder to write (local or remote).
        spm_model_file: str or None. A SentencePiece model to copy in as `spiece.model`.
            Defaults to None (no tokenizer files).
        exclude: Google names of variables to leave out (heads never trained). Defaults to
            none.

    Returns:
        `ExportReport`. The variables written and those left out.

    Raises:
        ValueError: when the config's `sharing` is not "all".
        FileNotFoundError: when `spm_model_file` does not exist.

    Example:

    >>> import json, os, tempfile, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> folder = tempfile.mkdtemp()
    >>> report = albert_tf.export_huggingface(
    ...     albert_tf.AlbertClassifier(config, 3), folder,
    ...     spm_model_file="tests/data/fixtures/spm.model")
    >>> print(report)
    wrote ...: 27 variables, 0 left out
    >>> sorted(os.listdir(folder))
    ['config.json', 'model.safetensors', 'spiece.model', 'tokenizer.json', 'tokenizer_config.json']
    >>> with open(os.path.join(folder, "config.json")) as f:
    ...     json.load(f)["architectures"]
    ['AlbertForSequenceClassification']
    """
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
        encoder = get_kind("encoder").huggingface
        config["architectures"] = [HUGGINGFACE_MASKED_LM if has_mlm else encoder]
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
    """Tell whether a folder is a Hugging Face model folder.

    Args:
        path: str or path-like. The folder to test.

    Returns:
        bool. True when it holds `config.json` and `model.safetensors` (or the sharded
        `model.safetensors.index.json`).
    """
    path = os.fspath(path)
    return fileio.isfile(fileio.join(path, "config.json")) and (
        fileio.isfile(fileio.join(path, WEIGHTS_FILE))
        or fileio.isfile(fileio.join(path, INDEX_FILE))
    )


def read_hf_tensors(folder) -> dict:
    """Read every tensor of a Hugging Face folder's safetensors weights.

    Reads `model.safetensors`, or every shard named by `model.safetensors.index.json`. The
    names of a bare AlbertModel's file (`embeddings.*`, `encoder.*`, `pooler.*`) get the
    `albert.` prefix of the task models' files.

    Args:
        folder: str or path-like. The Hugging Face folder.

    Returns:
        dict. transformers name -> NumPy array.

    Raises:
        ValueError: when a safetensors file cannot be read.
    """
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
    """Load a Hugging Face ALBERT folder into an albert_tf model.

    Unless `model` is given, one is built from the folder's `config.json`: its
    `architectures` choose the class (`AlbertForSequenceClassification` gives an
    AlbertClassifier, `AlbertForPreTraining` an AlbertPretrainer, ...; see
    `model_for_hf_config`). Neither PyTorch nor transformers is needed. A missing pooler is
    allowed; transformers' own copies (position ids, the tied decoder) are listed as ignored.

    Args:
        folder: str or path-like. A folder with `config.json` and `model.safetensors` (or
            sharded safetensors with their index), local or remote.
        model: an albert_tf model to load into, or None to build one. Defaults to None.

    Returns:
        tuple `(model, report)`: the albert_tf model and its `LoadReport`.

    Raises:
        FileNotFoundError: when `folder` or its `config.json` does not exist.
        ValueError: when `config.json` is not valid JSON or describes something albert_tf
            cannot compute, or the model has no embedding projection (embedding_size ==
            hidden_size) and the folder's is not the identity.
        InputError: when a tensor's shape differs from the model's, or an encoder tensor is
            missing.

    Example:

    >>> import tempfile, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> folder = tempfile.mkdtemp()
    >>> _ = albert_tf.export_huggingface(albert_tf.AlbertClassifier(config, 3), folder)
    >>> model, report = albert_tf.load_huggingface(folder)
    >>> type(model).__name__, model.num_labels
    ('AlbertClassifier', 3)
    >>> len(report.loaded), report.missing, report.unused
    (27, [], [])
    """
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
