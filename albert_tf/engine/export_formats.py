"""The export formats and quantize modes the fine-tuning drivers offer (`--export_format`,
`--quantize`), defined once for the flags, their checks and `albert_tf.deploy`."""

from __future__ import annotations

import importlib.util

from albert_tf.core.errors import InputError

SAVED_MODEL = "saved_model"
LITERT = "litert"
ONNX = "onnx"
EXPORT_FORMATS = (SAVED_MODEL, LITERT, ONNX)
# none: float32; float16: float16 weights; dynamic_int8: int8 weights, float activations;
# int8: full integer (weights and activations, calibrated), float input and output
QUANTIZE_MODES = ("none", "float16", "dynamic_int8", "int8")
# the ONNX exporter's module, looked up without importing it (it imports tf2onnx)
ONNX_MODULE = "albert_tf.deploy.onnx"
# the shortest input a LiteRT file takes (export_litert's max_seq_length check)
LITERT_MIN_LENGTH = 4


def parse_export_formats(value) -> tuple:
    """A comma list of export formats (e.g. "saved_model,litert") as a tuple, in the order
    given, each once.

    Raises:
        InputError: A format that is not one of EXPORT_FORMATS, or an empty list.
    """
    names = [n.strip().lower() for n in str(value or "").split(",") if n.strip()]
    bad = [n for n in names if n not in EXPORT_FORMATS]
    if bad or not names:
        raise InputError(
            f"--export_format: {', '.join(bad) or 'an empty list'} is not a format; use a comma "
            f"list of {', '.join(EXPORT_FORMATS)}"
        )
    return tuple(dict.fromkeys(names))


def check_quantize(quantize, formats) -> str:
    """--quantize checked against the formats it applies to (the LiteRT file); any case
    ("INT8" is "int8"), as --export_format.

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


def check_litert_length(max_seq_length, formats) -> None:
    """--max_seq_length checked against a LiteRT export's shortest input (export_litert's),
    before any training.

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
    value = lambda name: FLAGS[name].value if name in FLAGS else None
    formats = parse_export_formats(value("export_format") or SAVED_MODEL)
    quantize = str(value("quantize") or "none").lower()
    if not value("export_dir"):
        given = [n for n in ("export_format", "quantize") if n in FLAGS and FLAGS[n].present]
        if given:
            check_quantize(quantize, (LITERT,))  # a known mode: one round trip of errors
            needs = "--export_dir" + (
                " and --export_format=litert"
                if quantize != "none" and LITERT not in formats
                else ""
            )
            raise InputError(
                f"{', '.join('--' + n for n in given)} say{'s' * (len(given) == 1)} what "
                f"--export_dir gets: give {needs} too"
            )
        return formats, check_quantize(quantize, formats)
    check_litert_length(value("max_seq_length"), formats)
    return formats, check_quantize(quantize, formats)


def check_available(formats, quantize) -> None:
    """What the exports need beyond their flags, found before any work: the ONNX exporter for
    onnx, ai-edge-litert to measure a quantized LiteRT file.

    Raises:
        InputError: naming the flag whose export cannot run here.
    """
    if ONNX in formats and importlib.util.find_spec(ONNX_MODULE) is None:
        raise InputError(f"--export_format=onnx: {ONNX_MODULE} is not in this albert_tf")
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
