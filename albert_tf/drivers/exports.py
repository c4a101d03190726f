"""The fine-tuning drivers' export flags: `--export_dir`, `--export_format` and `--quantize`,
checked before any work, and the engine's export_fn built from them
(`albert_tf.deploy.exports` writes the version folder)."""

from __future__ import annotations

import importlib.util

from albert_tf.core.errors import InputError
from albert_tf.deploy.export_formats import LITERT, ONNX, QUANTIZE_MODES, parse_export_formats
from albert_tf.drivers import validation as v
from albert_tf.drivers.cli import in_flag_words
from albert_tf.tasks.serving import NEEDS_TOKENIZER

# what an export's own errors name (calibration data for quantize=int8) as the drivers' flag
FLAG_NAMES = {"quantize": "--quantize"}


def check_quantize_flag(quantize, formats) -> str:
    """--quantize checked against the formats it applies to (the LiteRT file).

    Args:
        quantize: --quantize's value.
        formats: The parsed --export_format.

    Returns:
        The mode.

    Raises:
        InputError: An unknown mode, or a mode other than "none" without litert.
    """
    if quantize not in QUANTIZE_MODES:
        raise InputError(f"--quantize: {quantize!r} is not one of {', '.join(QUANTIZE_MODES)}")
    if quantize != "none" and LITERT not in formats:
        raise InputError(
            f"--quantize={quantize} quantizes the LiteRT file: add litert to --export_format"
        )
    return quantize


def check_available(formats, quantize) -> None:
    """What the exports need beyond their flags, found before any work: tf2onnx and onnx for
    onnx, ai-edge-litert to measure a quantized LiteRT file.

    Args:
        formats: The parsed --export_format.
        quantize: --quantize's value.

    Raises:
        InputError: naming the flag whose export cannot run here.
    """
    if ONNX in formats:
        for package in ("tf2onnx", "onnx"):
            if importlib.util.find_spec(package) is None:
                raise InputError(
                    f"--export_format=onnx: the ONNX export needs {package} "
                    '(pip install "albert_tf[deploy]")'
                )
    if quantize != "none" and importlib.util.find_spec("ai_edge_litert") is None:
        raise InputError(
            f"--quantize={quantize}: measuring the quantized file needs ai-edge-litert "
            '(pip install "albert_tf[deploy]")'
        )


def check_export_flags(FLAGS):
    """Checks the export flags of a driver: --export_dir, --export_format and --quantize.

    --export_dir must be a writable folder, and the exported graph needs a tokenizer
    (--spm_model_file, or a WordPiece --vocab_file); --export_format must be a list of known
    formats and --quantize a known mode for a LiteRT file. Neither --export_format nor
    --quantize means anything without --export_dir.

    Args:
        FLAGS: absl.flags.FlagValues. The driver's flags (export_dir, spm_model_file and,
            where the driver has them, vocab_file, export_format and quantize).

    Raises:
        InputError: when the folder cannot be written, no tokenizer is given, a format or
            quantization mode is unknown or its packages are missing, or --export_format /
            --quantize come without --export_dir.
    """
    formats = parse_export_formats(
        v.flag_value(FLAGS, "export_format") or "saved_model", "--export_format"
    )
    quantize = v.flag_value(FLAGS, "quantize") or "none"
    check_quantize_flag(quantize, formats)
    if not v.flag_value(FLAGS, "export_dir"):
        for name in ("export_format", "quantize"):
            if name in FLAGS and FLAGS[name].present:
                raise InputError(f"--{name} says what --export_dir gets: give --export_dir too")
        return
    check_available(formats, quantize)
    v.check_output_dir("export_dir", FLAGS.export_dir)
    if not (FLAGS.spm_model_file or v.flag_value(FLAGS, "vocab_file")):
        raise InputError(NEEDS_TOKENIZER)


def exporter_from_flags(export, task, FLAGS):
    """The engine's export_fn from a driver's flags: --export_dir, --export_format, --quantize
    and --eval_batch_size (see albert_tf.deploy.exports.exporter).

    Args:
        export: The task's raw-text SavedModel export, `export(model, task, export_dir,
            also=writers)` (e.g. tasks.glue.serving.export_text_classifier).
        task: The fine-tuning task.
        FLAGS: The driver's parsed absl flags.

    Returns:
        The engine's export_fn, or None without --export_dir.
    """
    # deferred: the export writers import TensorFlow; the flags are checked before it loads
    from albert_tf.deploy.exports import ExportOptions, exporter

    if not FLAGS.export_dir:
        return None
    options = ExportOptions(
        FLAGS.export_dir,
        formats=parse_export_formats(FLAGS.export_format, "--export_format"),
        quantize=FLAGS.quantize,
        batch_size=FLAGS.eval_batch_size,
    )
    write = exporter(export, task, options)

    def export_fn(model):
        try:
            return write(model)
        except InputError as e:
            raise InputError(in_flag_words(e, FLAG_NAMES)) from None

    return export_fn
