"""Convert ALBERT weights between every format albert_tf reads and writes.

    python -m albert_tf.convert --input PATH --output PATH \
        [--output_format tf1|keras|keras_hub|huggingface] [--albert_config_file albert_config.json] \
        [--model pretrainer|encoder] [--spm_model_file 30k-clean.model]

The input format is detected from the files present: a `.keras` or `.weights.h5` file (Keras),
a folder with transformers' `config.json` + `model.safetensors` (Hugging Face), a folder with
keras-hub's `config.json` (keras-hub preset), or a TF1 checkpoint prefix, file or folder (Google).
`--albert_config_file` is needed only where the input carries no config (TF1, `.weights.h5`);
for TF1 an `albert_config.json` beside the checkpoint is used. Without `--output_format`, an
output ending in `.weights.h5`/`.keras` is Keras, anything else a TF1 checkpoint prefix.
The load report of the input is printed, then what was written.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from albert_tf import fileio

FORMATS = ("tf1", "keras", "keras_hub", "huggingface")
CONFIG_FILE = "albert_config.json"


def _is_keras(path):
    return os.fspath(path).endswith((".weights.h5", ".keras"))


def build_model(config, kind):
    from albert_tf.modeling.models import AlbertModel, AlbertPretrainer
    return AlbertPretrainer(config) if kind in (None, "pretrainer") else AlbertModel(config)


# ---- detection ----------------------------------------------------------------------------------
def detect_format(path) -> str:
    """The format of an input path, from the files present; a FileNotFoundError names the path
    when none matches."""
    from albert_tf.formats.huggingface import is_huggingface_folder
    from albert_tf.formats.keras_hub import is_keras_hub_preset
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
            f"model.safetensors), a keras-hub preset folder or a TF1 checkpoint") from None
    return "tf1"


def _input_folder(path):
    return path if fileio.isdir(path) else fileio.dirname(fileio.abspath(path))


def _config_for(path, albert_config_file):
    """The AlbertConfig from --albert_config_file, else from albert_config.json beside `path`."""
    from albert_tf.config import AlbertConfig
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
    from albert_tf.formats.huggingface import load_huggingface
    from albert_tf.formats.keras_hub import load_keras_hub
    from albert_tf.formats.tf1 import LoadReport, load_original_checkpoint, original_variable_map
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
        from albert_tf.keras_files import load_model
        return load_model(path)  # registers every albert_tf class a .keras file may name
    # a .weights.h5 file carries no config: --albert_config_file, else the one written beside it
    model = build_model(_config_for(path, config_file), model_kind)
    with fileio.local_copy(path) as local:
        model.load_weights(local)
    return model


# ---- writing --------------------------------------------------------------------------------
def _write_keras(model, output_path):
    if not _is_keras(output_path):
        raise ValueError(f"--output {output_path}: the keras format needs a name ending in "
                         ".weights.h5 or .keras")
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
    from albert_tf.formats.huggingface import export_huggingface
    from albert_tf.formats.keras_hub import export_keras_hub_preset
    from albert_tf.formats.tf1 import save_original_checkpoint
    output_path = os.fspath(output_path)
    if output_format == "keras_hub":
        return [str(export_keras_hub_preset(model, output_path, spm_model_file))]
    if output_format == "huggingface":
        return [str(export_huggingface(model, output_path, spm_model_file))]
    if output_format == "keras":
        _write_keras(model, output_path)
    else:
        save_original_checkpoint(model, output_path)
    lines = [f"wrote {output_path}"]
    config = _write_config_beside(model, output_path) if not output_path.endswith(".keras") else None
    return lines + ([f"wrote {config}"] if config else [])


def _default_spm(input_path):
    from albert_tf.formats.common import find_spm_model
    return find_spm_model(_input_folder(os.fspath(input_path)))


def convert(input_path, output_path, output_format=None, *, albert_config_file=None,
            model_kind=None, spm_model_file=None, require_encoder=True, log=None):
    """Read `input_path` (format detected) and write it to `output_path` in `output_format`
    (default: by the output's name). The SentencePiece model travels along to keras-hub and
    Hugging Face outputs (`spm_model_file`, else the one in the input's folder). Returns the
    input's LoadReport; `log(line)` receives what was written."""
    if output_format is None:
        output_format = "keras" if _is_keras(output_path) else "tf1"
    if output_format not in FORMATS:
        raise ValueError(f"--output_format {output_format!r} is unknown; use one of {FORMATS}")
    if spm_model_file is None and output_format in ("keras_hub", "huggingface"):
        spm_model_file = _default_spm(input_path)
    model, report = read_model(input_path, albert_config_file, model_kind, require_encoder)
    for line in write_model(model, output_path, output_format, spm_model_file):
        (log or (lambda _: None))(line)
    return report


convert_model = convert  # its package-level name: `albert_tf.convert` is this module


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m albert_tf.convert", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True,
                        help="TF1 checkpoint prefix/dir, .weights.h5, .keras, keras-hub preset or HF folder")
    parser.add_argument("--output", required=True, help="output path (a folder for keras_hub/huggingface)")
    parser.add_argument("--output_format", choices=FORMATS, default=None,
                        help="default: keras for .weights.h5/.keras names, else tf1")
    parser.add_argument("--albert_config_file", default=None,
                        help="needed only for inputs that carry no config (TF1, .weights.h5)")
    parser.add_argument("--model", choices=("pretrainer", "encoder"), default=None,
                        help="encoder keeps AlbertModel only; default: the model the input holds "
                             "(a pretrainer for TF1 and .weights.h5)")
    parser.add_argument("--spm_model_file", default=None,
                        help="SentencePiece model for keras_hub/huggingface outputs "
                             "(default: the one in the input's folder)")
    args = parser.parse_args(argv)
    written = []
    try:
        report = convert(args.input, args.output, args.output_format,
                         albert_config_file=args.albert_config_file, model_kind=args.model,
                         spm_model_file=args.spm_model_file, log=written.append)
    except (ValueError, FileNotFoundError, TypeError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(report)
    print("\n".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
