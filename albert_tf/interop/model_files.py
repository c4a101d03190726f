"""Read and write model files in every format albert_tf supports.

Detect an input's format, read it into a model with its load report, write a model in another
format, or do both at once (`convert_model`). The input format is detected from the files
present: a `.keras` or `.weights.h5` file (Keras), a folder with transformers' `config.json` and
`model.safetensors` (Hugging Face), a folder with keras-hub's `config.json` (keras-hub preset), a
SavedModel folder (a TF Hub / Kaggle ALBERT), a Model Garden TF2 checkpoint, or a TF1 checkpoint
prefix, file or folder (Google). A config is needed only where the input carries none (TF1,
`.weights.h5`, a Model Garden checkpoint); an `albert_config.json` beside the input is used.

Weights are never invented: a pretraining head the input lacks (the sentence-order head of the
TF2 formats, a masked-LM head) is left out of the output with a note; any other variable the
input lacks, or a fine-tuned head the output format has no place for, is an error unless
`allow_missing`. `python -m albert_tf.convert` is the command line over `convert_model`.
"""

from __future__ import annotations

import json
import os

from albert_tf.core import fileio
from albert_tf.core.config import CONFIG_FILE, AlbertConfig
from albert_tf.core.errors import InputError
from albert_tf.formats.release_folder import config_file_of, find_spm_model
from albert_tf.interop.keras_files import load_model
from albert_tf.modeling.model_kinds import MODEL_KINDS, get_kind
from albert_tf.modeling.names import original_variable_map

FORMATS = ("tf1", "keras", "keras_hub", "huggingface", "tfhub", "onnx")  # what is written
SPM_FORMATS = ("keras_hub", "huggingface", "tfhub")  # outputs that carry the tokenizer


def _is_keras(path):
    return os.fspath(path).endswith((".weights.h5", ".keras"))


def build_model(config, kind):
    """Build a fresh model of the kind a conversion asks for.

    Args:
        config: `AlbertConfig`. The model's configuration.
        kind: str or None. A model kind (`albert_tf.modeling.model_kinds.MODEL_KINDS`); None
            for an `AlbertPretrainer`.

    Returns:
        The new, randomly initialized model.

    Raises:
        InputError: An unknown kind, or a kind sized by its head (the input holds no head to
            size it by).
    """
    kind = "pretrainer" if kind is None else kind
    if kind not in MODEL_KINDS:
        raise InputError(f"model_kind {kind!r} is unknown; use one of {', '.join(MODEL_KINDS)}")
    spec = get_kind(kind)
    if spec.sized_by_head:
        raise InputError(
            f"model_kind {kind}: the input holds no task head to size it by; use model_kind "
            "pretrainer or encoder"
        )
    return spec.build(config)


# ---- detection ----------------------------------------------------------------------------------
def detect_format(path) -> str:
    """Detect the format of a model file or folder from the files present.

    Args:
        path: str or path-like. A `.keras` or `.weights.h5` file, a Hugging Face folder, a
            keras-hub preset folder, or a TF1 checkpoint prefix, file or folder.

    Returns:
        str. One of "keras", "huggingface", "keras_hub" or "tf1".

    Raises:
        FileNotFoundError: when a Keras file does not exist, or the path matches no format.

    Example:

    >>> from albert_tf.interop.model_files import detect_format
    >>> detect_format("tests/data/fixtures/albert_tiny")
    'tf1'
    """
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.huggingface import is_huggingface_folder

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.keras_hub import is_keras_hub_preset

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tf1 import resolve_checkpoint_path

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tfhub import source_kind

    path = os.fspath(path)
    if _is_keras(path):
        if not fileio.isfile(path):
            raise FileNotFoundError(f"Keras file not found: {path}")
        return "keras"
    if fileio.isdir(path) and is_huggingface_folder(path):
        return "huggingface"
    if fileio.isdir(path) and is_keras_hub_preset(path):
        return "keras_hub"
    kind = source_kind(path)
    if kind is not None:
        return kind
    if not fileio.exists(path) and not fileio.glob(path + ".*"):  # nor a checkpoint prefix
        raise FileNotFoundError(f"input_path {path}: no such file or folder")
    try:
        resolve_checkpoint_path(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"input_path {path}: not a .keras/.weights.h5 file, a Hugging Face folder "
            f"(config.json + model.safetensors), a keras-hub preset folder, a SavedModel folder "
            f"(TF Hub) or a TF1 / Model Garden checkpoint"
        ) from None
    return "tf1"


def _config_for(path, albert_config_file):
    """Read the AlbertConfig from albert_config_file, else from albert_config.json beside
    `path` (`release_folder.config_file_of`)."""
    config_file = config_file_of(path, albert_config_file)
    if config_file is None:
        raise ValueError(f"input_path {path} carries no config: pass albert_config_file")
    return AlbertConfig.from_json_file(config_file)


# ---- reading --------------------------------------------------------------------------------
def read_model(path, config_file=None, model_kind=None, require_encoder=True):
    """Read a model file or folder of any supported format into an albert_tf model.

    A self-describing input (`.keras`, Hugging Face, keras-hub) gives the model its own config
    names. A TF1 checkpoint gives the model its variables show: a driver run's output folder
    (or a checkpoint in it) the fine-tuned model its run_summary.json names, with its head; a
    release the AlbertPretrainer (AlbertModel without pretraining heads); a SQuAD head its
    SQuAD model. A pooled task head (`output_weights`) says not which task it is: without a run
    summary, `model_kind` must say (see `albert_tf.modeling.model_kinds.MODEL_KINDS`).
    A `.weights.h5` input gives an AlbertPretrainer unless `model_kind` says otherwise.

    Args:
        path: str or path-like. The input (see `detect_format`).
        config_file: str or None. An `albert_config.json` for inputs that carry no config (TF1,
            `.weights.h5`). Defaults to None: the `albert_config.json` beside the input.
        model_kind: str or None. What to build: "encoder" keeps only the encoder
            (`AlbertModel`); "pretrainer", "classifier", "regression", "multi_label",
            "token_classifier", "multiple_choice", "squad_v1", "squad_v2" build that model.
            Defaults to None: what the input says.
        require_encoder: bool. For TF1 inputs, raise when an encoder variable is missing.
            Defaults to True.

    Returns:
        tuple `(model, report)`: the model and its `LoadReport`.

    Raises:
        InputError: A fine-tuned checkpoint whose task nothing names, or an unknown
            `model_kind`.

    Example:

    >>> from albert_tf.interop.model_files import read_model
    >>> model, report = read_model("tests/data/fixtures/albert_tiny", model_kind="encoder")
    >>> type(model).__name__, len(report.loaded), report.missing
    ('AlbertModel', 25, [])
    """
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.huggingface import load_huggingface

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.keras_hub import load_keras_hub

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tf1 import LoadReport

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tfhub import load_tfhub, tfhub_config

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.interop.task_heads import load_checkpoint_into

    path = os.fspath(path)
    fmt = detect_format(path)
    if fmt == "huggingface":
        model, report = load_huggingface(path)
    elif fmt == "keras_hub":
        model, report = load_keras_hub(path)
    elif fmt in ("tfhub", "model_garden"):
        model = None
        if model_kind is not None:
            model = build_model(tfhub_config(path, config_file), model_kind)
        model, report = load_tfhub(path, model, albert_config_file=config_file)
    elif fmt == "tf1":
        model, checkpoint = _checkpoint_model(path, config_file, model_kind)
        report = load_checkpoint_into(model, checkpoint, require_encoder=require_encoder)

    else:
        model = _read_keras(path, config_file, model_kind)
        report = LoadReport(path, sorted(original_variable_map(model)), [], [], [])
    if model_kind == "encoder" and not hasattr(model, "embedding"):
        model = model.albert
    return model, report


def _checkpoint_model(path, config_file, model_kind):
    """(the model a TF1 or driver checkpoint holds, the checkpoint to load into it)."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.interop import task_heads as heads

    run = heads.run_folder_of(path) if model_kind is None else None
    if run is not None:
        model, _ = heads.model_from_run(run)
        return model, heads.run_checkpoint(run) if fileio.is_folder(path) else path
    config = _config_for(path, config_file)
    if model_kind is not None:
        return heads.model_for_kind(model_kind, config, path), path
    kind = heads.head_kind(path)
    if kind == "pooled":
        raise heads.ambiguous_head_error(path)
    return heads.model_for_kind(kind, config, path), path


def _read_keras(path, config_file, model_kind):
    if path.endswith(".keras"):
        model = load_model(path)  # registers every albert_tf class a .keras file may name
        if model_kind == "encoder" and hasattr(model, "albert"):
            return model.albert  # the encoder of a task model (its head left behind on purpose)
        return model
    # a .weights.h5 file carries no config: --albert_config_file, else the one written beside it
    model = build_model(_config_for(path, config_file), model_kind)
    with fileio.local_copy(path) as local:
        model.load_weights(local)
    return model


# ---- writing --------------------------------------------------------------------------------
def _write_keras(model, output_path):
    if not _is_keras(output_path):
        raise ValueError(
            f"output_path {output_path}: the keras format needs a name ending in .weights.h5 "
            "or .keras"
        )
    suffix = ".weights.h5" if output_path.endswith(".weights.h5") else ".keras"
    with fileio.atomic_path_with_suffix(output_path, suffix, local=True) as tmp:
        (model.save_weights if suffix == ".weights.h5" else model.save)(tmp)


def _write_config_beside(model, output_path):
    """Write albert_config.json beside a TF1 or .weights.h5 output (which carry no config),
    unless one is there already; returns the path written or None."""
    path = fileio.join(fileio.dirname(fileio.abspath(output_path)), CONFIG_FILE)
    if fileio.exists(path):
        return None
    return fileio.write_text(path, json.dumps(model.config.to_dict(), indent=2) + "\n")


def write_model(model, output_path, output_format, spm_model_file=None, untrained=()):
    """Write a model in one of the supported formats.

    A TF1 or `.weights.h5` output also gets an `albert_config.json` beside it, unless one is
    there already.

    Args:
        model: an albert_tf model.
        output_path: str or path-like. The checkpoint prefix (tf1), the `.keras` or
            `.weights.h5` file (keras), the `.onnx` file, or the folder (keras_hub,
            huggingface, tfhub) to write.
        output_format: str. One of "tf1", "keras", "keras_hub", "huggingface", "tfhub",
            "onnx".
        spm_model_file: str or None. A SentencePiece model to include in keras_hub,
            huggingface and tfhub outputs. Defaults to None.
        untrained: Google names of variables the input did not hold (still at their initial
            values); they are left out of the output. Defaults to none.

    Returns:
        list of str. Lines describing what was written, for printing.

    Raises:
        ValueError: for the keras format, when `output_path` does not end in `.keras` or
            `.weights.h5`, or when `untrained` is not empty (a Keras file saves the whole
            model).

    Example:

    >>> import os, tempfile
    >>> from albert_tf.interop.model_files import read_model, write_model
    >>> model, _ = read_model("tests/data/fixtures/albert_tiny")
    >>> folder = tempfile.mkdtemp()
    >>> write_model(model, os.path.join(folder, "model.ckpt"), "tf1")
    ['wrote .../model.ckpt', 'wrote .../albert_config.json']
    """
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.huggingface import export_huggingface

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.keras_hub import export_keras_hub_preset

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tf1 import group_names, save_original_checkpoint

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tfhub_export import export_tfhub

    output_path = os.fspath(output_path)
    if output_format == "onnx":
        # deferred: keeps TensorFlow (and tf2onnx) off this module's import
        from albert_tf.deploy.onnx import export_onnx

        return [f"wrote {export_onnx(model, output_path)}"]
    untrained = sorted(set(untrained) & set(original_variable_map(model)))
    # one line for what the input lacks (the exports' reports list only what has no place)
    lines = [f"{UNTRAINED_LEFT_OUT}: {group_names(untrained)}"] * bool(untrained)
    if output_format == "keras_hub":
        if any(n.startswith("cls/predictions/") for n in untrained):
            model = model.albert  # a preset's masked-LM task would carry the untrained head
        return lines + [str(export_keras_hub_preset(model, output_path, spm_model_file))]
    if output_format == "huggingface":
        report = export_huggingface(model, output_path, spm_model_file, exclude=untrained)
        return lines + [str(_without(report, untrained))]
    if output_format == "tfhub":
        report = export_tfhub(model, output_path, spm_model_file, exclude=untrained)
        return lines + [str(_without(report, untrained))]
    if output_format == "keras":
        if untrained:
            raise ValueError(
                f"output_path {output_path}: a Keras file saves the whole model, and the input "
                f"holds no {untrained[0]} ({len(untrained)} untrained head variables); use "
                "model_kind encoder, or another output_format"
            )
        _write_keras(model, output_path)
    else:
        save_original_checkpoint(model, output_path, exclude=untrained)
    lines.append(f"wrote {output_path}")
    config = (
        _write_config_beside(model, output_path) if not output_path.endswith(".keras") else None
    )
    return lines + ([f"wrote {config}"] if config else [])


def _without(report, untrained):
    """An export report listing as left out only what its format has no place for (what the
    input lacks is said once, by write_model)."""
    if hasattr(report, "left_out"):
        report.left_out = [n for n in report.left_out if n not in set(untrained)]
    return report


def _default_spm(input_path):
    return find_spm_model(fileio.folder_of(os.fspath(input_path)))


# the line of what an output lacks because the input did (it names every missing variable)
UNTRAINED_LEFT_OUT = "left out (not in the input, untrained)"
# The pretraining heads: an input may lack them (TF2 releases have no sentence-order head) and a
# format may have no place for them (keras-hub's pretrainer has none); never a fine-tuned head.
PRETRAINING_HEADS = ("cls/seq_relationship/", "cls/predictions/")


def _check_nothing_invented(model, report, output_format, allow_missing, log):
    """An InputError when the output would lack weights the model needs or lose a fine-tuned
    head (unless `allow_missing`, then log lines list them); pretraining heads only get a note."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tf1 import group_names

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.interop.task_heads import left_out_by

    def split(names):
        heads = [n for n in names if n.startswith(PRETRAINING_HEADS)]
        return heads, [n for n in names if not n.startswith(PRETRAINING_HEADS)]

    missing_heads, missing = split(report.missing)
    dropped_heads, dropped = split(left_out_by(model, output_format))
    if dropped_heads:
        log(
            f"note: the {output_format} format has no place for {group_names(dropped_heads)}; "
            "left out (a pretraining head)"
        )
    problems = []
    if missing:
        problems.append(
            f"{len(missing)} variables of {type(model).__name__} are not in the input "
            f"({group_names(missing)})"
        )
    if dropped:
        problems.append(
            f"the {output_format} format has no place for {len(dropped)} variables of "
            f"{type(model).__name__}; they would be left out ({group_names(dropped)})"
        )
    if problems and not allow_missing:
        raise InputError(
            "; ".join(problems) + ". Pass allow_missing to write it anyway, or model_kind encoder "
            "to convert the encoder only"
        )
    for line in problems:
        log(f"allow_missing: {line}")


def convert_model(
    input_path,
    output_path,
    output_format=None,
    *,
    albert_config_file=None,
    model_kind=None,
    spm_model_file=None,
    require_encoder=True,
    allow_missing=False,
    log=None,
):
    """Convert a model from any supported format to another, never inventing weights.

    The input's format is detected from its files (see `detect_format`): Google's TF1
    checkpoint, a `.keras` or `.weights.h5` file, a keras-hub preset, a Hugging Face folder, a
    TF Hub / Kaggle SavedModel or a Model Garden TF2 checkpoint. The SentencePiece model
    travels along to keras-hub, Hugging Face and TF Hub outputs. This is the function behind
    `python -m albert_tf.convert`.

    Args:
        input_path: str or path-like. The model to read.
        output_path: str or path-like. Where to write: a checkpoint prefix (tf1), a `.keras`
            or `.weights.h5` file (keras), an `.onnx` file, or a folder (keras_hub,
            huggingface, tfhub).
        output_format: str or None. One of "tf1", "keras", "keras_hub", "huggingface",
            "tfhub", "onnx". Defaults to None: "keras" when `output_path` ends in `.keras` or
            `.weights.h5`, "onnx" when it ends in `.onnx`, else "tf1".
        albert_config_file: str or None. An `albert_config.json` for inputs that carry no
            config (TF1, `.weights.h5`, Model Garden). Defaults to None: the one beside the
            input.
        model_kind: str or None. What to build (see `read_model`): None for what the input
            says (a driver run's fine-tuned model with its head, a release's pretrainer),
            "encoder" to convert only the encoder. Defaults to None.
        spm_model_file: str or None. The SentencePiece model for keras_hub, huggingface and
            tfhub outputs. Defaults to None: the one in the input's folder, if any.
        require_encoder: bool. For TF1 inputs, raise when an encoder variable is missing.
            Defaults to True.
        allow_missing: bool. Write even when a variable of the model (beyond a pretraining
            head) is not in the input, or when the output format has no place for a
            fine-tuned head; either is left out of the output and logged. Defaults to False:
            either is an InputError.
        log: callable or None. Called with each line describing what was written. Defaults to
            None (silent).

    Returns:
        `LoadReport`. What reading the input loaded.

    Raises:
        ValueError: when `output_format` is unknown.
        InputError: when the output would lack weights the model needs or lose a fine-tuned
            head, and `allow_missing` is False.

    Example:

    >>> import os, tempfile, albert_tf
    >>> folder = tempfile.mkdtemp()
    >>> report = albert_tf.convert_model("tests/data/fixtures/albert_tiny",
    ...                                  os.path.join(folder, "hf"), "huggingface", log=print)
    wrote .../hf: 32 variables, 0 left out
    >>> len(report.loaded), len(report.ignored)
    (32, 7)
    >>> sorted(os.listdir(os.path.join(folder, "hf")))
    ['config.json', 'model.safetensors', 'spiece.model', 'tokenizer.json', 'tokenizer_config.json']
    """
    if output_format is None:
        output_format = (
            "keras"
            if _is_keras(output_path)
            else "onnx"
            if os.fspath(output_path).endswith(".onnx")
            else "tf1"
        )
    if output_format not in FORMATS:
        raise ValueError(f"output_format {output_format!r} is unknown; use one of {FORMATS}")
    if spm_model_file is None and output_format in SPM_FORMATS:
        spm_model_file = _default_spm(input_path)
    model, report = read_model(input_path, albert_config_file, model_kind, require_encoder)
    _check_nothing_invented(model, report, output_format, allow_missing, log or (lambda _: None))
    lines = write_model(model, output_path, output_format, spm_model_file, report.missing)
    for line in lines:
        (log or (lambda _: None))(line)
    return report
