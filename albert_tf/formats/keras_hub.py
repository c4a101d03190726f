"""Convert between keras-hub ALBERT presets and albert_tf models, in both directions.

Export builds a `keras_hub.models.AlbertBackbone` from the model's config, fills it through one
name map (Google's names -> the backbone's variable paths, `RULES`) and saves it with keras-hub's
own `save_to_preset`, together with an `AlbertTokenizer` on the SentencePiece model. Import reads
a preset folder (or a live backbone) back through the same map. keras-hub's ALBERT computes what
Google's does (tanh GELU, LayerNorm epsilon 1e-12, post-LN blocks, contiguous groups), so the
outputs agree up to float rounding. An AlbertPretrainer's masked-LM head travels as an
`AlbertMaskedLM` task, whose head LayerNorm uses epsilon 1e-5 (Google's uses 1e-12), so its
masked-LM outputs differ slightly. The sentence-order and task heads have no place in a preset and
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
from albert_tf.modeling.model_kinds import get_kind
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
    """Translate an AlbertConfig into `keras_hub.models.AlbertBackbone` arguments.

    Args:
        config: `AlbertConfig`. The configuration to translate.

    Returns:
        dict. Keyword arguments of `AlbertBackbone` (`vocabulary_size`, `num_layers`, ...).

    Raises:
        ValueError: when keras-hub's ALBERT cannot compute the config: `sharing` other than
            "all", `num_hidden_layers` not divisible by `num_hidden_groups`, or a
            `hidden_act` other than tanh GELU ("gelu" or "gelu_new").

    Example:

    >>> import albert_tf
    >>> from albert_tf.formats.keras_hub import backbone_kwargs
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> kwargs = backbone_kwargs(config)
    >>> kwargs["vocabulary_size"], kwargs["num_layers"], kwargs["embedding_dim"]
    (100, 2, 8)
    """
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
    """Build the AlbertConfig of a keras-hub AlbertBackbone.

    The activation is Google's tanh "gelu"; the backbone's one dropout rate becomes both the
    hidden and the attention dropout.

    Args:
        backbone: `keras_hub.models.AlbertBackbone`. The backbone to describe.

    Returns:
        `AlbertConfig`.
    """
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
    """Give the AlbertBackbone variable path of an encoder variable's Google name.

    Args:
        google_name: str. A Google name, e.g. `bert/embeddings/word_embeddings`.

    Returns:
        str. The keras-hub variable path.

    Raises:
        KeyError: when the variable has no place in a keras-hub AlbertBackbone.

    Example:

    >>> from albert_tf.formats.keras_hub import keras_hub_name
    >>> keras_hub_name("bert/embeddings/word_embeddings")
    'token_embedding/embeddings'
    >>> keras_hub_name("bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/gamma")
    'group_0_inner_layer_0/feedforward_layer_norm/gamma'
    """
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


KERAS_HUB_INSTALL_HINT = 'pip install "albert_tf[keras_hub]"'  # the optional extra


def import_keras_hub():
    """The keras_hub package, imported on first use (it is slow to import, and optional).

    Returns:
        module. `keras_hub`.

    Raises:
        ImportError: when keras-hub is not installed (or cannot be imported); the message
            says how to install it: `pip install "albert_tf[keras_hub]"`.

    Example:

    >>> import_keras_hub().models.AlbertBackbone.__name__
    'AlbertBackbone'
    """
    try:
        # deferred: keras-hub is slow to import and only the keras-hub paths need it
        import keras_hub
    except ImportError as e:
        raise ImportError(
            f"keras-hub presets need the keras-hub package, which cannot be imported ({e}): "
            f"{KERAS_HUB_INSTALL_HINT}"
        ) from None
    return keras_hub


# ---- export -----------------------------------------------------------------------------------
def to_backbone(model):
    """Build a keras-hub AlbertBackbone holding an albert_tf model's encoder weights.

    When embedding_size equals hidden_size, the backbone's embedding projection (which
    keras-hub always has) is set to the identity, which computes the same thing.

    Args:
        model: an albert_tf model (`AlbertModel`, `AlbertPretrainer` or a task model).

    Returns:
        `keras_hub.models.AlbertBackbone`.

    Raises:
        ValueError: when keras-hub cannot compute the model's config (see
            `backbone_kwargs`).
    """
    keras_hub = import_keras_hub()

    albert = model if hasattr(model, "embedding") else model.albert
    backbone = keras_hub.models.AlbertBackbone(**backbone_kwargs(albert.config))
    variables = _backbone_variables(backbone)
    names = encoder_variable_map(albert)
    if albert.embedding.projection is None:  # E == H: keras-hub always projects; identity is exact
        names = {**names, **identity_projection(albert.config.hidden_size)}
    _fill(variables, names)
    return backbone


def to_masked_lm(model, preprocessor=None):
    """Build a keras-hub AlbertMaskedLM holding an AlbertPretrainer's encoder and MLM head.

    keras-hub's head LayerNorm uses epsilon 1e-5 where Google's uses 1e-12.

    Args:
        model: `AlbertPretrainer`. The model to copy.
        preprocessor: a keras-hub `AlbertMaskedLMPreprocessor` or None. Defaults to None.

    Returns:
        `keras_hub.models.AlbertMaskedLM`.
    """
    keras_hub = import_keras_hub()

    task = keras_hub.models.AlbertMaskedLM(to_backbone(model), preprocessor=preprocessor)
    _fill({v.path: v for v in task.weights}, original_variable_map(model))
    return task


def export_keras_hub_preset(model, preset_dir, spm_model_file=None) -> ExportReport:
    """Save an albert_tf model as a keras-hub preset folder.

    `keras_hub.models.AlbertBackbone.from_preset(preset_dir)` loads the result, and so does
    `AlbertTokenizer.from_preset(preset_dir)` when `spm_model_file` is given. An
    AlbertPretrainer's masked-LM head goes along as an `AlbertMaskedLM` task (whose head
    LayerNorm uses epsilon 1e-5, Google's 1e-12); the sentence-order head and task heads are
    left out and listed in the report. `config.json` is written last, so a reader never pairs
    an old config with new weights. Needs keras-hub installed.

    Args:
        model: an albert_tf model (`AlbertModel`, `AlbertPretrainer` or a task model) whose
            config has `sharing="all"`, layers divisible by groups, and tanh GELU.
        preset_dir: str or path-like. The folder to write (local or remote).
        spm_model_file: str or None. A SentencePiece model to save as the preset's tokenizer.
            Defaults to None (no tokenizer).

    Returns:
        `ExportReport`. The variables written and those left out.

    Raises:
        FileNotFoundError: when `spm_model_file` does not exist.
        ValueError: when keras-hub cannot compute the model's config.

    Example:

    >>> import os, tempfile, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> folder = tempfile.mkdtemp()
    >>> report = albert_tf.export_keras_hub_preset(albert_tf.AlbertModel(config), folder)
    >>> print(report)
    wrote ...: 25 variables, 0 left out
    >>> sorted(os.listdir(folder))
    ['config.json', 'metadata.json', 'model.weights.h5']
    >>> import keras_hub
    >>> keras_hub.models.AlbertBackbone.from_preset(folder).num_layers
    2
    """
    keras_hub = import_keras_hub()

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
    """Tell whether a folder is a keras-hub preset.

    Args:
        path: str or path-like. The folder to test.

    Returns:
        bool. True when the folder holds a keras-hub `config.json` (a JSON object with
        `class_name` and `module`).
    """
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
    keras_hub = import_keras_hub()

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
    keras_hub = import_keras_hub()

    if isinstance(source, keras_hub.models.AlbertMaskedLM):
        return source.backbone, source, source.name
    if isinstance(source, keras_hub.models.AlbertBackbone):
        return source, source, source.name
    path = os.fspath(source)
    if not is_keras_hub_preset(path):
        raise FileNotFoundError(f"not a keras-hub preset folder (no keras-hub config.json): {path}")
    kind = (
        keras_hub.models.AlbertMaskedLM
        if _task_class(path) == get_kind("pretrainer").keras_hub
        else keras_hub.models.AlbertBackbone
    )
    with fileio.local_folder_copy(path) as local:  # keras-hub reads local folders
        loaded = kind.from_preset(local)
    if kind is keras_hub.models.AlbertMaskedLM:
        return loaded.backbone, loaded, path
    return loaded, loaded, path


def load_keras_hub(source, model=None):
    """Load a keras-hub ALBERT (a preset folder or a live model) into an albert_tf model.

    Unless `model` is given, one is built from the backbone's config: an `AlbertPretrainer`
    for an `AlbertMaskedLM` (or a preset whose task is one), else an `AlbertModel`. Heads that
    keras-hub does not hold (sentence-order, task heads) keep their initial values and are
    listed in the report's `missing`. Needs keras-hub installed.

    Args:
        source: a keras-hub preset folder (str or path-like, local or remote), or a live
            `keras_hub.models.AlbertBackbone` or `keras_hub.models.AlbertMaskedLM`.
        model: an albert_tf model to load into, or None to build one. Defaults to None.

    Returns:
        tuple `(model, report)`: the albert_tf model and its `LoadReport`.

    Raises:
        FileNotFoundError: when `source` is a path but not a keras-hub preset folder.
        ValueError: when a tensor's size does not fit the model, or the model has no
            embedding projection (embedding_size == hidden_size) and the source's is not the
            identity.

    Example:

    >>> import tempfile, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> folder = tempfile.mkdtemp()
    >>> _ = albert_tf.export_keras_hub_preset(albert_tf.AlbertPretrainer(config), folder)
    >>> model, report = albert_tf.load_keras_hub(folder)
    >>> type(model).__name__, len(report.loaded)
    ('AlbertPretrainer', 30)
    >>> report.missing  # the sentence-order head has no place in keras-hub
    ['cls/seq_relationship/output_bias', 'cls/seq_relationship/output_weights']
    >>> import keras_hub
    >>> backbone = keras_hub.models.AlbertBackbone(
    ...     vocabulary_size=100, num_layers=2, num_heads=2, embedding_dim=8, hidden_dim=16,
    ...     intermediate_dim=32)
    >>> model, report = albert_tf.load_keras_hub(backbone)
    >>> type(model).__name__, model.config.hidden_size, report.missing
    ('AlbertModel', 16, [])
    """
    backbone, holder, label = _read_source(source)
    if model is None:
        config = config_from_backbone(backbone)
        model = get_kind("pretrainer" if holder is not backbone else "encoder").build(config)
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
