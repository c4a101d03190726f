"""Deploy's vocabulary: the export formats a version folder may hold and the LiteRT file's
quantize modes, defined once for `albert_tf.deploy.exports`, `albert_tf.deploy.quantization` and
the drivers' `--export_format` / `--quantize` flags (albert_tf.drivers). Importing it loads no
TensorFlow.

A new quantize mode is one entry of QUANTIZE_MODES plus its converter settings in
`albert_tf.deploy.quantization.configure`; the flag's help and checks read this tuple.
"""

from __future__ import annotations

from albert_tf.core.errors import InputError

SAVED_MODEL = "saved_model"
LITERT = "litert"
ONNX = "onnx"
EXPORT_FORMATS = (SAVED_MODEL, LITERT, ONNX)
# none: float32; float16: float16 weights; dynamic_int8: int8 weights, float activations;
# int8: int8 weights and calibrated int8 activations for the weight matmuls, the other ops in
# float (quantization.INT8_FLOAT_OPS), float input and output
QUANTIZE_MODES = ("none", "float16", "dynamic_int8", "int8")
# the shortest input a LiteRT file takes (export_litert's max_seq_length check)
LITERT_MIN_LENGTH = 4


def parse_export_formats(value, argument="formats") -> tuple:
    """A comma list (or sequence) of export formats as a tuple, in the order given, each once.

    Args:
        value: "saved_model,litert", or a sequence of format names.
        argument: The name the error gives the value (a driver passes its flag's).

    Returns:
        The formats, lowercased, each once.

    Raises:
        InputError: A format that is not one of EXPORT_FORMATS, or an empty list.

    Example:

    >>> parse_export_formats("saved_model, LiteRT,saved_model")
    ('saved_model', 'litert')
    """
    if not isinstance(value, str):
        value = ",".join(value or ())
    names = [n.strip().lower() for n in str(value or "").split(",") if n.strip()]
    bad = [n for n in names if n not in EXPORT_FORMATS]
    if bad or not names:
        raise InputError(
            f"{argument}: {', '.join(bad) or 'an empty list'} is not a format; use a comma "
            f"list of {', '.join(EXPORT_FORMATS)}"
        )
    return tuple(dict.fromkeys(names))
