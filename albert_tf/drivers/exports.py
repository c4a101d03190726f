"""The fine-tuning drivers' export flags: `--export_dir`, `--export_format` and `--quantize`,
checked before any work, and the engine's export_fn built from them
(`albert_tf.deploy.exports` writes the version folder)."""

from __future__ import annotations

import importlib.util

from albert_tf.core import environment
from albert_tf.core.errors import InputError, TrainingError
from albert_tf.deploy.export_formats import (
    LITERT,
    LITERT_MIN_LENGTH,
    ONNX,
    QUANTIZE_MODES,
    SAVED_MODEL,
    parse_export_formats,
)
from albert_tf.drivers import validation as v
from albert_tf.drivers.flag_words import in_flag_words
from albert_tf.drivers.tensorflow_export import exporter_in_tensorflow
from albert_tf.tasks.serving import NEEDS_TOKENIZER

# what an export's own errors name (calibration data for quantize=int8, a failed format) as
# the drivers' flags
FLAG_NAMES = {"quantize": "--quantize", "formats": "--export_format", "export_dir": "--export_dir"}
# what a driver adds to an export that failed after training
RETRY = "; the trained checkpoint is in --output_dir: run the same command with --nodo_train to "
RETRY += "export it again"


def check_quantize_flag(quantize, formats) -> str:
    """--quantize checked against the formats it applies to (the LiteRT file); any case
    ("INT8" is "int8"), as --export_format.

    Args:
        quantize: --quantize's value.
        formats: The parsed --export_format.

    Returns:
        The mode, lowercased.

    Raises:
        InputError: An unknown mode, or a mode other than "none" without litert.
    """
    quantize = str(quantize or "none").strip().lower()
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


def check_litert_length(max_seq_length, formats) -> None:
    """--max_seq_length checked against a LiteRT export's shortest input (export_litert's),
    before any training.

    Args:
        max_seq_length: --max_seq_length's value (None where a driver has no such flag).
        formats: The parsed --export_format.

    Raises:
        InputError: litert in formats and a length below LITERT_MIN_LENGTH.
    """
    if LITERT in formats and max_seq_length is not None and max_seq_length < LITERT_MIN_LENGTH:
        raise InputError(
            f"--max_seq_length={max_seq_length}: --export_format=litert writes files of at "
            f"least {LITERT_MIN_LENGTH} positions; use --max_seq_length >= {LITERT_MIN_LENGTH}"
        )


def check_export_choices(FLAGS) -> tuple:
    """The export flags' values a driver checks before TensorFlow loads (the cli does, before
    the driver's main): --export_format, --quantize (any case), each only with --export_dir,
    and --max_seq_length for a LiteRT file. Flags a driver lacks count as not given.

    Args:
        FLAGS: The parsed absl flags.

    Returns:
        (formats, quantize): the parsed --export_format and the lowercased --quantize.

    Raises:
        InputError: An unknown format or mode, --export_format / --quantize without
            --export_dir (naming all it needs at once), a LiteRT length below 4.
    """
    formats = parse_export_formats(
        v.flag_value(FLAGS, "export_format") or SAVED_MODEL, "--export_format"
    )
    quantize = str(v.flag_value(FLAGS, "quantize") or "none").lower()
    if not v.flag_value(FLAGS, "export_dir"):
        given = [n for n in ("export_format", "quantize") if n in FLAGS and FLAGS[n].present]
        if given:
            check_quantize_flag(quantize, (LITERT,))  # a known mode: one round trip of errors
            needs = "--export_dir" + (
                " and --export_format=litert"
                if quantize != "none" and LITERT not in formats
                else ""
            )
            raise InputError(
                f"{', '.join('--' + n for n in given)} say{'s' * (len(given) == 1)} what "
                f"--export_dir gets: give {needs} too"
            )
        return formats, check_quantize_flag(quantize, formats)
    check_litert_length(v.flag_value(FLAGS, "max_seq_length"), formats)
    return formats, check_quantize_flag(quantize, formats)


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
    formats, quantize = check_export_choices(FLAGS)
    if not v.flag_value(FLAGS, "export_dir"):
        return
    check_available(formats, quantize)
    v.check_output_dir("export_dir", FLAGS.export_dir)
    if not (FLAGS.spm_model_file or v.flag_value(FLAGS, "vocab_file")):
        words = {n: f"--{n}" for n in ("export_dir", "spm_model_file", "vocab_file")}
        raise InputError(in_flag_words(NEEDS_TOKENIZER, words))


def exporter_from_flags(export, task, FLAGS):
    """The engine's export_fn from a driver's flags: --export_dir, --export_format, --quantize
    and --eval_batch_size (see albert_tf.deploy.exports.exporter). On a Keras backend other
    than TensorFlow the same export runs in a TensorFlow process
    (`drivers.tensorflow_export`).

    Args:
        export: The task's raw-text SavedModel export, `export(model, task, export_dir,
            also=writers)` (e.g. tasks.classification.serving.export_text_classifier).
        task: The fine-tuning task.
        FLAGS: The driver's parsed absl flags.

    Returns:
        The engine's export_fn, or None without --export_dir.
    """
    # deferred: the export writers import TensorFlow; the flags are checked before it loads
    from albert_tf.deploy.exports import ExportOptions, exporter

    if not FLAGS.export_dir:
        return None
    if environment.keras_backend() != "tensorflow":
        return exporter_in_tensorflow(FLAGS)
    options = ExportOptions(
        FLAGS.export_dir,
        formats=parse_export_formats(FLAGS.export_format, "--export_format"),
        quantize=FLAGS.quantize,
        batch_size=FLAGS.eval_batch_size,
    )
    return export_fn_for(exporter(export, task, options))


def export_fn_for(write):
    """A library exporter (`albert_tf.deploy.exports.exporter`) as a driver's export_fn: its
    errors said in the drivers' flags, and an export that failed after training says how to
    export the trained checkpoint again.

    Args:
        write: model → version folder.

    Returns:
        The engine's export_fn.
    """

    def export_fn(model):
        try:
            return write(model)
        except InputError as e:
            raise InputError(in_flag_words(e, FLAG_NAMES)) from None
        except TrainingError as e:
            raise TrainingError(in_flag_words(e, FLAG_NAMES) + RETRY) from e.__cause__

    export_fn.warnings = getattr(write, "warnings", [])
    return export_fn
