"""Quantization of the LiteRT files, and its cost in accuracy, measured.

Modes (`quantize=`): "none" (float32), "float16" (float16 weights, dequantized to float32 when
the file loads), "dynamic_int8" (int8 weights; activations quantized on the fly per call),
"int8" (weights and the weight matmuls' activations int8, the activations' ranges calibrated on
a representative dataset, the other ops in float: `INT8_FLOAT_OPS`; int32 ids in, float outputs
out). Which runtime loads which: docs/deployment.md (the
Task Library's 2023 runtime does not know the FULLY_CONNECTED version 12 that dynamic_int8
writes; ai-edge-litert 2.3 runs every mode).

`compare_outputs` says how far a quantized file's outputs are from the float32 Keras model's:
agreement of the decisions (argmax, labels over 0.5, span ends), the largest change of any
probability, the largest change of any output.
"""

from __future__ import annotations

from typing import Iterable, Optional
import warnings

import numpy as np

from albert_tf.deploy.export_formats import QUANTIZE_MODES

# the attention-mask adder of an int8 file, in place of Google's -10000: where the scores and
# the mask's sum get one calibrated int8 range, -10000 stretches it to a step of 39 (every real
# score one integer: uniform attention, a trained classifier's decisions lost); at -100 a
# padded key's weight is still exp(-100) ≈ 4e-44 of a real one's in float (measured:
# docs/deployment.md#quantization). INT8_FLOAT_OPS now keeps that sum in float; the adder
# stays so that no quantizer that does give it a range can flatten the scores again
INT8_MASK_ADDER = -100.0
# the ops an int8 file computes in float (inputs dequantized, outputs quantized again): all but
# the weight matmuls (FULLY_CONNECTED, ~97% of the FLOPs) and data movement. Why: XNNPACK has
# no int8 kernel for BATCH_MATMUL (the attention's activation x activation products), SOFTMAX,
# GELU, RSQRT or SQUARED_DIFFERENCE (LayerNorm), so in int8 they ran in TFLite's reference
# kernels (BATCH_MATMUL 14x, SOFTMAX 5x slower than XNNPACK's float) and cut each layer into
# ~9 XNNPACK partitions; with these, and the elementwise ops between them, in float, XNNPACK
# takes the encoder in 2 partitions as for dynamic_int8, and the file runs at dynamic_int8's
# speed instead of 2.5-4x slower (docs/deployment.md#every-deployment-path-measured). Scores,
# softmax and LayerNorm in float also keep more of what the model learned.
INT8_FLOAT_OPS = (
    "BATCH_MATMUL",
    "SOFTMAX",
    "GELU",
    "RSQRT",
    "SQUARED_DIFFERENCE",
    "MEAN",
    "NEG",
    "ADD",  # residuals, the mask adder, LayerNorm's parts: all next to the ops above
    "SUB",
    "MUL",
)
CALIBRATION_EXAMPLES = 100  # representative examples the drivers calibrate int8 on
AGREEMENT_FLOOR = 0.98  # a quantized file deciding less alike than this is worth a warning
# quantize modes whose files the Task Library 0.4.4 cannot load (measured: tests/deploy)
TASK_LIBRARY_CANNOT_LOAD = {
    "dynamic_int8": "FULLY_CONNECTED version 12 (int8 weights with float activations), which "
    "the Task Library's 2023 runtime does not know",
}


def check_quantize(quantize: str, representative_dataset) -> str:
    """`quantize` checked: a known mode, with calibration data for "int8".

    Raises:
        ValueError: An unknown mode, or int8 without a representative_dataset.
    """
    if quantize not in QUANTIZE_MODES:
        raise ValueError(f"quantize={quantize!r}: use one of {', '.join(QUANTIZE_MODES)}")
    if quantize == "int8" and representative_dataset is None:
        raise ValueError(
            "representative_dataset: quantize='int8' calibrates the activations' ranges on "
            "example inputs; pass an iterable of feature dicts (e.g. some training records)"
        )
    return quantize


def _rows(value, spec, name="", vocab_size=None) -> Iterable[np.ndarray]:
    """A feature's value as rows shaped like the spec ([1, ...]): one example, or a batch.

    Raises:
        ValueError: Rows of another shape than the file's, or input_ids outside the vocabulary.
    """
    array = np.asarray(value)
    if array.dtype.kind in "OSU":  # strings: one text, or a list of them
        return [row[None] for row in array.astype(object).reshape(-1, *spec.shape[1:])]
    row_shape = tuple(spec.shape[1:])
    if array.ndim < len(row_shape) or tuple(array.shape[array.ndim - len(row_shape) :]) != (
        row_shape
    ):
        raise ValueError(
            f"representative_dataset: {name} of shape {array.shape} does not fit the file's "
            f"rows of {list(row_shape)} (one example, or a batch of them, at its max_seq_length)"
        )
    if name == "input_ids" and vocab_size and array.size:
        low, high = int(array.min()), int(array.max())
        if low < 0 or high >= vocab_size:
            raise ValueError(
                f"representative_dataset: input_ids {low if low < 0 else high} is outside the "
                f"model's vocabulary [0, {vocab_size}): ids of another tokenizer?"
            )
    array = array.astype(spec.dtype.as_numpy_dtype).reshape(-1, *row_shape)
    return [row[None] for row in array]


def representative_examples(
    dataset, specs: dict, limit: Optional[int] = None, vocab_size: Optional[int] = None
) -> list:
    """Calibration inputs: feature dicts (one example or a batch each, e.g. [length] or
    [batch, length] arrays) turned into {input name: [1, ...] array} dicts, as many as
    `limit`.

    Args:
        dataset: An iterable of feature dicts with a value for each input in `specs`.
        specs: {input name: tf.TensorSpec} of the LiteRT file's inputs.
        limit: The most examples kept (None: all).
        vocab_size: The model's vocabulary size: input_ids must lie in [0, vocab_size).

    Returns:
        A list of dicts.

    Raises:
        ValueError: A dict lacking an input, rows of another shape than the file's, or
            input_ids outside the vocabulary.
    """
    examples = []
    for item in dataset:
        if not isinstance(item, dict) or any(name not in item for name in specs):
            raise ValueError(
                f"representative_dataset: each item is a feature dict with {sorted(specs)}"
            )
        rows = {name: _rows(item[name], spec, name, vocab_size) for name, spec in specs.items()}
        for i in range(min(len(r) for r in rows.values())):
            examples.append({name: r[i] for name, r in rows.items()})
            if limit is not None and len(examples) >= limit:
                return examples
    if not examples:
        raise ValueError("representative_dataset: no examples")
    return examples


def configure(converter, quantize: str, examples=None) -> None:
    """Sets a tf.lite.TFLiteConverter for a quantize mode (`examples`: the int8 calibration
    inputs from representative_examples)."""
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    if quantize == "none":
        return
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]
    elif quantize == "int8":
        converter.representative_dataset = lambda: iter(examples)


def convert_quantized(converter, quantize: str, examples=None) -> bytes:
    """Converts with a quantize mode's settings; "int8" keeps `INT8_FLOAT_OPS` in float.

    Args:
        converter: A tf.lite.TFLiteConverter, its other settings made.
        quantize: A mode of QUANTIZE_MODES.
        examples: The int8 calibration inputs (from representative_examples).

    Returns:
        The LiteRT file's bytes.
    """
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    configure(converter, quantize, examples)
    if quantize != "int8":
        return converter.convert()
    # TensorFlow's public door to the quantizer's op denylist: it calibrates once, then
    # quantizes all but the denylisted ops (the debugging model it also builds is not kept)
    options = tf.lite.experimental.QuantizationDebugOptions(denylisted_ops=list(INT8_FLOAT_OPS))
    with warnings.catch_warnings():  # it loads that model with the deprecated tf.lite.Interpreter
        warnings.filterwarnings("ignore", message=r"(?s).*tf\.lite\.Interpreter is deprecated")
        debugger = tf.lite.experimental.QuantizationDebugger(
            converter=converter, debug_options=options
        )
    return debugger.get_nondebug_quantized_model()


def _masked_softmax(logits, mask):
    """Softmax over the real positions only (padding's logits are of no meaning: Keras'
    padding-free encoder leaves them at the bias, the fixed-shape file computes them)."""
    x = np.where(np.asarray(mask) > 0, np.asarray(logits, np.float64), -np.inf)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def probabilities(kind: str, outputs: dict, mask) -> list:
    """The probability-like arrays of a kind's outputs on real positions (span logits through a
    softmax over the real positions, token probabilities of the real tokens)."""
    if kind == "squad_v1":
        return [_masked_softmax(outputs[k], mask) for k in ("start_logits", "end_logits")]
    if kind == "squad_v2":
        return [np.exp(outputs["start_top_log_probs"]), np.exp(outputs["end_top_log_probs"])]
    if kind == "token_classifier":
        return [np.asarray(outputs["probabilities"])[np.asarray(mask) > 0]]
    if "probabilities" in outputs:
        return [np.asarray(outputs["probabilities"])]
    return []


def decisions(kind: str, outputs: dict, mask):
    """What a kind's outputs decide, one row per example (or per real token): the argmax
    class, the labels over 0.5, the span's start and end on real positions, or None
    (regression, features)."""
    if kind in ("classifier", "multiple_choice"):
        return np.argmax(outputs["probabilities"], -1)[:, None]
    if kind == "multi_label":
        return np.asarray(outputs["probabilities"]) >= 0.5
    if kind == "token_classifier":
        labels = np.argmax(outputs["probabilities"], -1)
        return labels[np.asarray(mask) > 0][:, None]
    if kind == "squad_v1":
        return np.stack([np.argmax(p, -1) for p in probabilities(kind, outputs, mask)], -1)
    if kind == "squad_v2":
        return np.stack([outputs["start_top_index"][:, 0], outputs["end_top_index"][:, 0]], -1)
    return None


def compare_outputs(kind: str, reference: dict, other: dict, mask) -> dict:
    """How far `other`'s outputs (a LiteRT file's) are from `reference`'s (float32 Keras), on
    the same real examples.

    Args:
        kind: The model kind (see `litert.model_kind`).
        reference: {output name: array [examples, ...]}.
        other: The same names, the same shapes.
        mask: [examples, length] input_mask: which positions are real.

    Returns:
        {"examples", "agreement" (the share of equal decisions; None where a kind decides
        nothing), "max_probability_change" (on real positions), "max_abs_difference" (of any
        output, padding included)}.
    """
    names = sorted(set(reference) & set(other))
    diff = max(
        (float(np.max(np.abs(np.float64(reference[n]) - np.float64(other[n])), initial=0.0)))
        for n in names
    )
    change = [
        float(np.max(np.abs(a - b), initial=0.0))
        for a, b in zip(probabilities(kind, reference, mask), probabilities(kind, other, mask))
    ]
    mine, theirs = decisions(kind, reference, mask), decisions(kind, other, mask)
    agreement = None
    if mine is not None and len(mine):
        agreement = float(np.mean(np.all(mine == theirs, axis=-1)))
    return {
        "examples": int(len(next(iter(reference.values())))),
        "agreement": agreement,
        "max_probability_change": max(change) if change else None,
        "max_abs_difference": diff,
    }


def agreement_warning(report: dict, floor: float = AGREEMENT_FLOOR) -> Optional[str]:
    """The warning a quantization report deserves: its file's decisions agree with float32
    Keras' less often than `floor` (None when they agree enough, or the kind decides nothing).

    Args:
        report: A quantization report (`compare_outputs`' keys, and "quantize", optionally
            "split" and "metrics": {"keras_float32": {...}, "litert_<mode>": {...}}).
        floor: The least agreement that passes.

    Returns:
        One line with the figures, or None.

    >>> line = agreement_warning({"quantize": "int8", "agreement": 0.5, "examples": 50,
    ...     "max_probability_change": 0.99, "split": "dev"})
    >>> line  # doctest: +ELLIPSIS
    'the int8 LiteRT file agrees with float32 Keras on only 50% of its decisions on dev (...'
    >>> line[line.index("("):]
    '(50 examples; agreement 0.5 < 0.98; largest probability change 0.99): check it before...'
    >>> agreement_warning({"quantize": "int8", "agreement": 1.0, "examples": 50}) is None
    True
    """
    agreement = report.get("agreement")
    if agreement is None or agreement >= floor:
        return None
    figures = f"{report['examples']} examples; agreement {agreement:.4g} < {floor:g}"
    change = report.get("max_probability_change")
    if change is not None:
        figures += f"; largest probability change {change:.2g}"
    metrics = report.get("metrics") or {}
    if len(metrics) == 2:
        before, after = metrics.values()
        figures += "".join(f"; {k} {before[k]:.4g} → {after[k]:.4g}" for k in before if k in after)
    return (
        f"the {report['quantize']} LiteRT file agrees with float32 Keras on only "
        f"{agreement:.0%} of its decisions on {report.get('split', 'the examples')} ({figures}): "
        "check it before shipping it"
    )
