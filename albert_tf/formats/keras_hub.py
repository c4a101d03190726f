"""keras-hub presets ⇄ albert_tf encoders, both ways.

Export builds a `keras_hub.models.AlbertBackbone` from the config, fills it through one name
map (Google's names → the backbone's variable paths) and saves it with keras-hub's own
`save_to_preset`, with an `AlbertTokenizer` on the SentencePiece model; import reads a preset
folder (or a live backbone) back through the same map. keras-hub's ALBERT computes what Google's
does (tanh GELU, LayerNorm epsilon 1e-12, post-LN blocks, contiguous groups), so outputs agree
to float rounding. An AlbertPretrainer's masked-LM head travels as an `AlbertMaskedLM` task, whose
head LayerNorm uses epsilon 1e-5 (Google's: 1e-12); the SOP and task heads have no place there and
are reported as left out.
"""

from __future__ import annotations

import os

from albert_tf.core import fileio
from albert_tf.core.config import AlbertConfig
from albert_tf.formats.common import (
    PROJECTION as _PROJECTION,
)
from albert_tf.formats.common import (
    ExportReport,
    check_identity_projection,
    identity_projection,
    rename,
    reshape_checked,
)
from albert_tf.formats.tf1 import assign_google_named
from albert_tf.modeling.albert_model import AlbertModel, AlbertPretrainer
from albert_tf.modeling.names import encoder_variable_map, original_variable_map
from albert_tf.text.vocab_files import read_spm_model

_BLOCK = r"bert/encoder/transformer/group_(\d+)/inner_group_(\d+)/"
_KH_BLOCK = r"group_\1_inner_layer_\2/"
# Google name → keras-hub AlbertBackbone variable path.
RULES = (
    (r"bert/embeddings/word_embeddings", "token_embedding/embeddings"),
    (r"bert/embeddings/position_embeddings", "position_embedding/embeddings"),
    (r"bert/embeddings/token_type_embeddings", "segment_embedding/embeddings"),
    (r"bert/embeddings/LayerNorm/(gamma|beta)", r"embeddings_layer_norm/\1"),
    (r"bert/encoder/embedding_hidden_mapping_in/(kernel|bias)", r"embedding_projection/\1"),
    (
        _BLOCK + r"attention_1/self/(query|key|value)/(kernel|bias)",
        _KH_BLOCK + r"self_attention_layer/\3/\4",
    ),
    (
        _BLOCK + r"attention_1/output/dense/(kernel|bias)",
        _KH_BLOCK + r"self_attention_layer/attention_output/\3",
    ),
    (_BLOCK + r"LayerNorm/(gamma|beta)", _KH_BLOCK + r"self_attention_layer_norm/\3"),
    (
        _BLOCK + r"ffn_1/intermediate/dense/(kernel|bias)",
        _KH_BLOCK + r"feedforward_intermediate_dense/\3",
    ),
    (
        _BLOCK + r"ffn_1/intermediate/output/dense/(kernel|bias)",
        _KH_BLOCK + r"feedforward_output_dense/\3",
    ),
    (_BLOCK + r"LayerNorm_1/(gamma|beta)", _KH_BLOCK + r"feedforward_layer_norm/\3"),
    (r"bert/pooler/dense/(kernel|bias)", r"pooled_dense/\1"),
    # AlbertMaskedLM's head (its decoder is tied to token_embedding, as Google's)
    (r"cls/predictions/transform/dense/(kernel|bias)", r"mlm_head/intermediate_dense/\1"),
    (r"cls/predictions/transform/LayerNorm/(gamma|beta)", r"mlm_head/intermediate_layer_norm/\1"),
    (r"cls/predictions/output_bias", "mlm_head/output_bias"),
)
MLM_EPSILON = 1e-5  # keras-hub's MaskedLMHead LayerNorm epsilon (Google's is 1e-12)


# ---- configs ----------------------------------------------------------------------------------
def backbone_kwargs(config) -> dict:
    """AlbertBackbone constructor arguments for an AlbertConfig; refuses what keras-hub's ALBERT
    cannot compute (partial sharing, groups not dividing the layers, another activation)."""
    if config.sharing != "all":
        raise ValueError(
            f"keras-hub's AlbertBackbone shares whole blocks only; sharing="
            f"{config.sharing!r} cannot be exported"
        )
    if config.num_hidden_layers % config.num_hidden_groups:
        raise ValueError(
            f"keras-hub's AlbertBackbone needs num_hidden_layers "
            f"({config.num_hidden_layers}) divisible by num_hidden_groups "
            f"({config.num_hidden_groups})"
        )
    if config.hidden_act not in ("gelu", "gelu_new"):
        raise ValueError(
            f"keras-hub's AlbertBackbone computes tanh GELU only; hidden_act="
            f"{config.hidden_act!r} cannot be exported"
        )
    return dict(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        embedding_dim=config.embedding_size,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        num_groups=config.num_hidden_groups,
        num_inner_repetitions=config.inner_group_num,
        dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size,
    )


def config_from_backbone(backbone):
    """The AlbertConfig of a keras-hub AlbertBackbone (Google's tanh "gelu", one dropout rate)."""
    b = backbone
    return AlbertConfig(
        vocab_size=b.vocabulary_size,
        embedding_size=b.embedding_dim,
        hidden_size=b.hidden_dim,
        num_hidden_layers=b.num_layers,
        num_hidden_groups=b.num_groups,
        num_attention_heads=b.num_heads,
        intermediate_size=b.intermediate_dim,
        inner_group_num=b.num_inner_repetitions,
        hidden_act="gelu",
        hidden_dropout_prob=b.dropout,
        attention_probs_dropout_prob=b.dropout,
        max_position_embeddings=b.max_sequence_length,
        type_vocab_size=b.num_segments,
    )


# ---- the map ----------------------------------------------------------------------------------
def keras_hub_name(google_name: str) -> str:
    """The AlbertBackbone variable path of an encoder variable's Google name."""
    path = rename(google_name, RULES)
    if path is None:
        raise KeyError(f"{google_name} has no place in a keras-hub AlbertBackbone")
    return path


def _backbone_variables(backbone) -> dict:
    return {v.path: v for v in backbone.weights}


def _fill(variables, names):
    """Assign Google-named values to the keras-hub variables they map to; returns those names."""
    written = []
    for google, source in names.items():
        path = rename(google, RULES)
        if path in variables:
            variables[path].assign(reshape_checked(source, variables[path].shape, google))
            written.append(google)
    return written


# ---- export -----------------------------------------------------------------------------------
def to_backbone(model):
    """A keras-hub AlbertBackbone holding the encoder weights of any albert_tf model."""
    # deferred: keras-hub is slow to import and only this path needs it
    import keras_hub

    albert = model if hasattr(model, "embedding") else model.albert
    backbone = keras_hub.models.AlbertBackbone(**backbone_kwargs(albert.config))
    variables = _backbone_variables(backbone)
    names = encoder_variable_map(albert)
    if albert.embedding.projection is None:  # E == H: keras-hub always projects; identity is exact
        names = {**names, **identity_projection(albert.config.hidden_size)}
    _fill(variables, names)
    return backbone


def to_masked_lm(model, preprocessor=None):
    """A keras-hub AlbertMaskedLM holding an AlbertPretrainer's encoder and masked-LM head."""
    # deferred: keras-hub is slow to import and only this path needs it
    import keras_hub

    task = keras_hub.models.AlbertMaskedLM(to_backbone(model), preprocessor=preprocessor)
    _fill({v.path: v for v in task.weights}, original_variable_map(model))
    return task


def export_keras_hub_preset(model, preset_dir, spm_model_file=None) -> ExportReport:
    """Write a keras-hub preset folder that `AlbertBackbone.from_preset(preset_dir)` loads (and,
    with `spm_model_file`, `AlbertTokenizer.from_preset(preset_dir)`). An AlbertPretrainer's
    masked-LM head goes along as an `AlbertMaskedLM` task; other heads are left out."""
    # deferred: keras-hub is slow to import and only this path needs it
    import keras_hub

    preset_dir = os.fspath(preset_dir)
    tokenizer = None
    if spm_model_file is not None:
        if not fileio.exists(spm_model_file):
            raise FileNotFoundError(f"SentencePiece model not found: {spm_model_file}")
        tokenizer = keras_hub.models.AlbertTokenizer(proto=read_spm_model(spm_model_file))
    if fileio.is_remote(preset_dir):
        fileio.remove(fileio.join(preset_dir, "config.json"))  # no old config over new weights
    with fileio.output_folder(preset_dir, last=("config.json",)) as folder:
        variables = _save_preset(model, tokenizer, folder)
    names = original_variable_map(model)
    written = sorted(n for n in names if rename(n, RULES) in variables)
    return ExportReport(preset_dir, written, sorted(set(names) - set(written)))


# ---- import -----------------------------------------------------------------------------------
def is_keras_hub_preset(path) -> bool:
    """A folder with keras-hub's config.json naming a registered class (`class_name`)."""
    config = fileio.join(os.fspath(path), "config.json")
    if not fileio.isfile(config):
        return False
    try:
        data = fileio.read_json(config)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "class_name" in data and "module" in data


def _save_preset(model, tokenizer, folder) -> set:
    """Save the preset's files into the local `folder`; returns the variable paths written."""
    # deferred: keras-hub is slow to import and only this path needs it
    import keras_hub

    if hasattr(model, "mlm_head"):
        preprocessor = tokenizer and keras_hub.models.AlbertMaskedLMPreprocessor(
            tokenizer, sequence_length=model.config.max_position_embeddings
        )
        task = to_masked_lm(model, preprocessor)
        task.save_to_preset(folder)
        return {v.path for v in task.weights}
    backbone = to_backbone(model)
    backbone.save_to_preset(folder)
    if tokenizer is not None:
        tokenizer.save_to_preset(folder)
    return set(_backbone_variables(backbone))


def _task_class(path):
    """The class_name of a preset's task.json, or None."""
    task = fileio.join(path, "task.json")
    if not fileio.isfile(task):
        return None
    return fileio.read_json(task).get("class_name")


def _read_source(source):
    """(backbone, object holding the variables, label) of a preset folder, a live AlbertBackbone
    or a live AlbertMaskedLM (a preset with an AlbertMaskedLM task is read as one)."""
    # deferred: keras-hub is slow to import and only this path needs it
    import keras_hub

    if isinstance(source, keras_hub.models.AlbertMaskedLM):
        return source.backbone, source, source.name
    if isinstance(source, keras_hub.models.AlbertBackbone):
        return source, source, source.name
    path = os.fspath(source)
    if not is_keras_hub_preset(path):
        raise FileNotFoundError(f"not a keras-hub preset folder (no keras-hub config.json): {path}")
    kind = (
        keras_hub.models.AlbertMaskedLM
        if _task_class(path) == "AlbertMaskedLM"
        else keras_hub.models.AlbertBackbone
    )
    with fileio.local_folder_copy(path) as local:  # keras-hub reads local folders
        loaded = kind.from_preset(local)
    if kind is keras_hub.models.AlbertMaskedLM:
        return loaded.backbone, loaded, path
    return loaded, loaded, path


def load_keras_hub(source, model=None):
    """Read a keras-hub preset folder, a live `AlbertBackbone` or `AlbertMaskedLM` into an
    albert_tf model (unless `model` is given: an AlbertPretrainer for an AlbertMaskedLM, else an
    AlbertModel, from the backbone's config). Returns (model, LoadReport); heads keras-hub does
    not hold (SOP, task heads) are reported missing."""
    backbone, holder, label = _read_source(source)
    if model is None:
        config = config_from_backbone(backbone)
        model = AlbertPretrainer(config) if holder is not backbone else AlbertModel(config)
    variables = _backbone_variables(holder)
    albert = model if hasattr(model, "embedding") else model.albert
    expected = {}
    for google, target in original_variable_map(model).items():
        path = rename(google, RULES)
        if path in variables:
            expected[google] = (path, tuple(target.shape))
    if albert.embedding.projection is None:
        check_identity_projection(
            variables[keras_hub_name(_PROJECTION[0])].numpy(),
            variables[keras_hub_name(_PROJECTION[1])].numpy(),
            label,
        )
    arrays = {
        g: reshape_checked(variables[p].numpy(), shape, f"{label}: {p}")
        for g, (p, shape) in expected.items()
    }
    mapped = {p for p, _ in expected.values()} | {keras_hub_name(n) for n in _PROJECTION}
    report = assign_google_named(
        model, {n: a.shape for n, a in arrays.items()}, arrays.__getitem__, label
    )
    report.unused = sorted(p for p in variables if p not in mapped)
    return model, report
