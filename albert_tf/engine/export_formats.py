"""The export formats and quantize modes the fine-tuning drivers offer (`--export_format`,
`--quantize`), defined once for the flags, their checks and `albert_tf.deploy`."""

from __future__ import annotations

from albert_tf.core.errors import InputError

SAVED_MODEL, LITERT, ONNX = "saved_model", "litert", "onnx"
EXPORT_FORMATS = (SAVED_MODEL, LITERT, ONNX)
# none: float32; float16: float16 weights; dynamic_int8: int8 weights, float activations;
# int8: full integer (weights and activations, calibrated), float input and output
QUANTIZE_MODES = ("none", "float16", "dynamic_int8", "int8")


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
    """--quantize checked against the formats it applies to (the LiteRT file).

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
