"""Google's TF2 ALBERT releases → albert_tf models: the TF Hub / Kaggle SavedModels
(`albert_en_{base,large,xlarge,xxlarge}/3`, with or without the `.mlm` subobject, made by Model
Garden's `export_tfhub.py`), Model Garden's TF2 encoder / pretrainer checkpoints, and the
SavedModels `export_tfhub` (formats/tfhub_export.py) writes.

The weights are read without running anything and without tf_keras or tf-models-official:
a SavedModel's variables by their Keras names from `saved_model.pb` and `variables/`
(core/saved_model_proto.py), a checkpoint's by its keys; formats/model_garden.py renames
both to Google's names. The config comes, in this order, from `albert_config_file`, an
`albert_config.json` in the folder, the one an albert_tf export carries in `assets/`, else from
the source itself: vocabulary, E, H, FFN, positions and type vocabulary from the tensor shapes,
the head count from the per-head attention kernels, the number of layers from the length of
`encoder_outputs` in the SavedModel's `__call__` signature, and the activation from the graph's
ops (an `Erf` op: exact GELU; `Relu`: relu; else Google's tanh GELU, what Model Garden's "gelu"
computes). A TF2 checkpoint does not store its number of layers (one shared block): it needs a
config. The TF2 formats carry no sentence-order head, and a SavedModel without `.mlm` no
masked-LM head: such heads of the model stay at their initial values and the load report says
so (converters then leave them out instead of writing them as if trained).
"""

from __future__ import annotations

import dataclasses
import os

from albert_tf.core import fileio
from albert_tf.core.config import CONFIG_FILE, AlbertConfig
from albert_tf.core.errors import InputError
from albert_tf.core.saved_model_proto import (
    is_saved_model,
    read_saved_model,
    saved_variables,
)
from albert_tf.formats import model_garden as mg
from albert_tf.formats.tf1 import assign_google_named, check_shapes_fit
from albert_tf.modeling.albert_model import AlbertModel, AlbertPretrainer

ASSET_CONFIG = f"assets/{CONFIG_FILE}"  # albert_tf's own exports carry their config
OWN_VARIABLES = "albert_variables"  # an albert_tf export's {Google name: variable} attribute
ORIGINS = {"tfhub": "the TF Hub SavedModel", "model_garden": "the Model Garden TF2 checkpoint"}


@dataclasses.dataclass
class TfHubSource:
    """A TF2 source in Google's names, with the config it gives and how that was found."""

    kind: str  # "tfhub" or "model_garden"
    view: mg.GoogleView
    config: AlbertConfig
    has_mlm: bool
    config_note: str  # where the config came from
    notes: list  # what could not map as it is


def is_tfhub_folder(path) -> bool:
    """A SavedModel folder (read as a TF Hub ALBERT; a SavedModel that is not one is refused
    when it is read)."""
    return is_saved_model(path)


def source_kind(path) -> str | None:
    """ "tfhub" for a SavedModel folder, "model_garden" for a Model Garden TF2 checkpoint, else
    None."""
    if is_saved_model(path):
        return "tfhub"
    return "model_garden" if mg.is_model_garden_checkpoint(path) else None


# ---- SavedModels --------------------------------------------------------------------------------
def _saved_model_view(path):
    """(GoogleView, has_mlm, the SavedModelProto) of a TF Hub ALBERT SavedModel folder."""
    saved = read_saved_model(path)
    children = saved.root_children()
    if "tokenize" in children or "bert_pack_inputs" in children:
        raise InputError(
            f"{path} is a TF Hub preprocessing model (a tokenizer), not an ALBERT encoder: "
            "pass it as the tokenizer (spm_model_file)"
        )
    own = OWN_VARIABLES in children
    variables = saved_variables(saved, named_by=OWN_VARIABLES if own else None)
    rules = (("(.+)", r"\1"),) if own else mg.SAVED_MODEL_RULES
    view = mg.renamed_view(path, variables.shapes, variables.read, rules)
    mg.check_is_albert(view, f"SavedModel {path}")
    has_mlm = "mlm_logits" in saved.call_outputs("mlm")
    return view, has_mlm, saved


def _activation(saved) -> tuple:
    ops = saved.op_types()
    if "Erf" in ops:
        return "gelu_exact", "an Erf op: exact GELU"
    if "Relu" in ops:
        return "relu", "a Relu op"
    return "gelu", "no Erf op: Google's tanh GELU"


def _given_config(path, albert_config_file):
    """(AlbertConfig, its file) given or found in the folder, else (None, None)."""
    folder = fileio.folder_of(path)
    candidates = [albert_config_file] if albert_config_file else []
    candidates += [fileio.join(folder, CONFIG_FILE), fileio.join(folder, ASSET_CONFIG)]
    for candidate in candidates:
        if candidate and fileio.isfile(candidate):
            return AlbertConfig.from_json_file(candidate), os.fspath(candidate)
    if albert_config_file:
        raise InputError(f"albert_config_file {albert_config_file}: no such file")
    return None, None


def read_source(path, albert_config_file=None, model_config=None) -> TfHubSource:
    """The TfHubSource of a TF Hub SavedModel folder or a Model Garden TF2 checkpoint;
    `model_config` (the config of the model it fills) stands in where no file gives one."""
    path = os.fspath(path)
    kind = source_kind(path)
    if kind is None:
        raise InputError(f"{path}: neither a SavedModel folder nor a Model Garden TF2 checkpoint")
    config, config_file = _given_config(path, albert_config_file)
    if config is None and model_config is not None:
        config, config_file = model_config, "the model's config"
    if kind == "tfhub":
        view, has_mlm, saved = _saved_model_view(path)
    else:
        view, has_mlm, saved = mg.checkpoint_view(path), None, None
        has_mlm = "cls/predictions/output_bias" in view.shapes
    if config is not None:
        mg.check_view_fits_config(config, view, config_file)
        config_note = f"config from {config_file}"
    elif saved is None:
        raise InputError(
            f"Model Garden checkpoint {view.source} does not store its number of layers (one "
            f"shared block): put an {CONFIG_FILE} beside it or pass albert_config_file"
        )
    else:
        config, config_note = _config_off_saved_model(view, saved)
    notes = []
    types = view.shapes[mg.TOKEN_TYPE][0]
    if types != 2:
        notes.append(
            f"type_vocab_size is {types} (Google's TF1 releases have 2): kept as it is, every "
            "row of the type table is loaded"
        )
    return TfHubSource(kind, view, config, has_mlm, config_note, notes)


def _config_off_saved_model(view, saved):
    layers = saved.call_outputs().get("encoder_outputs")
    if not layers:
        raise InputError(
            f"SavedModel {view.source}: its __call__ returns no encoder_outputs list, so the "
            f"number of layers is unknown; put an {CONFIG_FILE} beside it"
        )
    act, why = _activation(saved)
    config = mg.config_from_view(view, layers, act)
    return config, (
        f"config read off the SavedModel: {layers} layers (len(encoder_outputs)), "
        f"{config.num_attention_heads} heads (per-head kernels), hidden_act {act} ({why}); "
        f"dropout not stored ({config.hidden_dropout_prob}); an {CONFIG_FILE} beside it wins"
    )


def tfhub_config(path, albert_config_file=None) -> AlbertConfig:
    """The AlbertConfig of a TF Hub SavedModel folder or a Model Garden TF2 checkpoint (see the
    module docstring for where each value comes from)."""
    return read_source(path, albert_config_file).config


# ---- loading ------------------------------------------------------------------------------------
def _untrained_notes(report, kind):
    """A note for a masked-LM head the source lacks (left at initial values); a missing
    sentence-order head (no TF2 format carries one) is said by the report's `missing` line."""
    mlm = [n for n in report.missing if n.startswith("cls/") and n not in mg.SOP]
    notes = []
    if mlm:
        notes.append(
            f"{ORIGINS[kind]} has no masked-LM head (no .mlm / masked_lm): {len(mlm)} cls/"
            "predictions variables left at their initial values"
        )
    return notes


def load_tfhub(path, model=None, *, albert_config_file=None):
    """Read Google's TF2 ALBERT release into an albert_tf model.

    Reads a TF Hub / Kaggle SavedModel folder (`albert_en_base/3`, with or without `.mlm`), a
    SavedModel written by `export_tfhub`, or a Model Garden TF2 encoder / pretrainer checkpoint
    (a prefix, folder or file; it needs a config for its number of layers). No tf_keras or
    tf-models-official is needed, nothing of the SavedModel runs.

    Args:
        path: The SavedModel folder or the checkpoint.
        model: An albert_tf model to fill (e.g. a classifier whose head stays fresh); by
            default an AlbertPretrainer when the source has a masked-LM head, else an
            AlbertModel, built from the source's config.
        albert_config_file: A config that wins over the one read off the source (an
            `albert_config.json` in the source's folder is used too, else a given model's
            config, e.g. the driver's --albert_config_file); it must fit the tensors.

    Returns:
        (model, LoadReport): the report lists what was loaded, what the model has that the
        source lacks (`missing`, left at initial values, e.g. the sentence-order head the TF2
        formats never carry) and notes on the config and on what could not map.

    Raises:
        InputError: the path is not such a source (a preprocessing model, a BERT, an
            incomplete folder), or the config does not fit its tensors.

    Example:

    >>> model, report = load_tfhub("tests/data/fixtures/tfhub/albert_tiny_model")
    >>> type(model).__name__, model.config.num_hidden_layers, len(report.loaded)
    ('AlbertModel', 4, 25)
    """
    source = read_source(path, albert_config_file, getattr(model, "config", None))
    notes = list(source.notes)
    if model is None:
        model = (AlbertPretrainer if source.has_mlm else AlbertModel)(source.config)
        notes.insert(0, source.config_note)
    else:
        mg.check_view_fits_config(model.config, source.view, "the model's config")
    view = source.view
    report = assign_google_named(
        model, view.shapes, view.read, view.source, ignored=view.ignored, require_encoder=True
    )
    report.unused = sorted(report.unused + view.unused)
    report.notes = notes + _untrained_notes(report, source.kind)
    return model, report


def check_tf2_release_fits_config(config, path, config_file="the config"):
    """InputError unless a TF2 source holds every encoder variable `config` gives, with the
    shapes and the head count it gives them (read from the index, no model is built)."""
    path = os.fspath(path)
    view = _saved_model_view(path)[0] if is_saved_model(path) else mg.checkpoint_view(path)
    mg.check_view_fits_config(config, view, config_file)
    check_shapes_fit(config, view.shapes, view.source, config_file)
    return view.source
