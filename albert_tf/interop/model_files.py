"""Model files of every format albert_tf reads and writes: detect an input's format, read it into
a model with its load report, write a model in another format, or do both (`convert_model`).

The input format is detected from the files present: a `.keras` or `.weights.h5` file (Keras),
a folder with transformers' `config.json` + `model.safetensors` (Hugging Face), a folder with
keras-hub's `config.json` (keras-hub preset), or a TF1 checkpoint prefix, file or folder (Google).
A config is needed only where the input carries none (TF1, `.weights.h5`); for TF1 an
`albert_config.json` beside the checkpoint is used. `python -m albert_tf.convert` is the
command line over `convert_model`.
"""

from __future__ import annotations

import json
import os

from albert_tf.core import fileio
from albert_tf.core.config import AlbertConfig
from albert_tf.formats.common import find_spm_model
from albert_tf.interop.keras_files import load_model
from albert_tf.modeling.names import original_variable_map

FORMATS = ("tf1", "keras", "keras_hub", "huggingface", "onnx")
CONFIG_FILE = "albert_config.json"


def _is_keras(path):
    return os.fspath(path).endswith((".weights.h5", ".keras"))


def build_model(config, kind):
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.modeling.albert_model import AlbertModel, AlbertPretrainer

    return AlbertPretrainer(config) if kind in (None, "pretrainer") else AlbertModel(config)


# ---- detection ----------------------------------------------------------------------------------
def detect_format(path) -> str:
    """The format of an input path, from the files present; a FileNotFoundError names the path
    when none matches."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.huggingface import is_huggingface_folder

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.keras_hub import is_keras_hub_preset

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tf1 import resolve_checkpoint_path

    path = os.fspath(path)
    if _is_keras(path):
        if not fileio.isfile(path):
            raise FileNotFoundError(f"Keras file not found: {path}")
        return "keras"
    if fileio.isdir(path) and is_huggingface_folder(path):
        return "huggingface"
    if fileio.isdir(path) and is_keras_hub_preset(path):
        return "keras_hub"
    try:
        resolve_checkpoint_path(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"--input {path}: not a .keras/.weights.h5 file, a Hugging Face folder (config.json + "
            f"model.safetensors), a keras-hub preset folder or a TF1 checkpoint"
        ) from None
    return "tf1"


def _input_folder(path):
    return path if fileio.isdir(path) else fileio.dirname(fileio.abspath(path))


def _config_for(path, albert_config_file):
    """The AlbertConfig from --albert_config_file, else from albert_config.json beside `path`."""
    if albert_config_file is None:
        beside = fileio.join(_input_folder(path), CONFIG_FILE)
        if not fileio.isfile(beside):
            raise ValueError(f"--input {path} carries no config: pass --albert_config_file")
        albert_config_file = beside
    return AlbertConfig.from_json_file(albert_config_file)


# ---- reading --------------------------------------------------------------------------------
def read_model(path, config_file=None, model_kind=None, require_encoder=True):
    """(model, LoadReport) for any input format. `model_kind` "encoder" keeps only the
    AlbertModel; by default a TF1 or `.weights.h5` input gives an AlbertPretrainer and a
    self-describing input the model its config names."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.huggingface import load_huggingface

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.keras_hub import load_keras_hub

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tf1 import LoadReport, load_original_checkpoint

    path = os.fspath(path)
    fmt = detect_format(path)
    if fmt == "huggingface":
        model, report = load_huggingface(path)
    elif fmt == "keras_hub":
        model, report = load_keras_hub(path)
    elif fmt == "tf1":
        model = build_model(_config_for(path, config_file), model_kind)
        report = load_original_checkpoint(model, path, require_encoder=require_encoder)
    else:
        model = _read_keras(path, config_file, model_kind)
        report = LoadReport(path, sorted(original_variable_map(model)), [], [], [])
    if model_kind == "encoder" and not hasattr(model, "embedding"):
        model = model.albert
    return model, report


def _read_keras(path, config_file, model_kind):
    if path.endswith(".keras"):
        return load_model(path)  # registers every albert_tf class a .keras file may name
    # a .weights.h5 file carries no config: --albert_config_file, else the one written beside it
    model = build_model(_config_for(path, config_file), model_kind)
    with fileio.local_copy(path) as local:
        model.load_weights(local)
    return model


# ---- writing --------------------------------------------------------------------------------
def _write_keras(model, output_path):
    if not _is_keras(output_path):
        raise ValueError(
            f"--output {output_path}: the keras format needs a name ending in .weights.h5 or .keras"
        )
    suffix = ".weights.h5" if output_path.endswith(".weights.h5") else ".keras"
    with fileio.atomic_path_with_suffix(output_path, suffix, local=True) as tmp:
        (model.save_weights if suffix == ".weights.h5" else model.save)(tmp)


def _write_config_beside(model, output_path):
    """albert_config.json beside a TF1 or .weights.h5 output (which carry none), unless one is
    there already; returns the path written or None."""
    path = fileio.join(fileio.dirname(fileio.abspath(output_path)), CONFIG_FILE)
    if fileio.exists(path):
        return None
    return fileio.write_text(path, json.dumps(model.config.to_dict(), indent=2) + "\n")


def write_model(model, output_path, output_format, spm_model_file=None):
    """Write `model` in `output_format`; returns the lines to print about what was written."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.huggingface import export_huggingface

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.keras_hub import export_keras_hub_preset

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tf1 import save_original_checkpoint

    output_path = os.fspath(output_path)
    if output_format == "onnx":
        # deferred: keeps TensorFlow (and tf2onnx) off this module's import
        from albert_tf.deploy.onnx import export_onnx

        return [f"wrote {export_onnx(model, output_path)}"]
    if output_format == "keras_hub":
        return [str(export_keras_hub_preset(model, output_path, spm_model_file))]
    if output_format == "huggingface":
        return [str(export_huggingface(model, output_path, spm_model_file))]
    if output_format == "keras":
        _write_keras(model, output_path)
    else:
        save_original_checkpoint(model, output_path)
    lines = [f"wrote {output_path}"]
    config = (
        _write_config_beside(model, output_path) if not output_path.endswith(".keras") else None
    )
    return lines + ([f"wrote {config}"] if config else [])


def _default_spm(input_path):
    return find_spm_model(_input_folder(os.fspath(input_path)))


def convert_model(
    input_path,
    output_path,
    output_format=None,
    *,
    albert_config_file=None,
    model_kind=None,
    spm_model_file=None,
    require_encoder=True,
    log=None,
):
    """Read `input_path` (format detected) and write it to `output_path` in `output_format`
    (default: by the output's name: `.keras` / `.weights.h5` Keras, `.onnx` ONNX, else TF1). The
    SentencePiece model travels along to keras-hub and Hugging Face outputs (`spm_model_file`,
    else the one in the input's folder). Returns the input's LoadReport; `log(line)` receives
    what was written."""
    if output_format is None:
        output_format = (
            "keras"
            if _is_keras(output_path)
            else "onnx"
            if os.fspath(output_path).endswith(".onnx")
            else "tf1"
        )
    if output_format not in FORMATS:
        raise ValueError(f"--output_format {output_format!r} is unknown; use one of {FORMATS}")
    if spm_model_file is None and output_format in ("keras_hub", "huggingface"):
        spm_model_file = _default_spm(input_path)
    model, report = read_model(input_path, albert_config_file, model_kind, require_encoder)
    for line in write_model(model, output_path, output_format, spm_model_file):
        (log or (lambda _: None))(line)
    return report
