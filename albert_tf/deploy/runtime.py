"""Running LiteRT files in Python with ai-edge-litert (LiteRT's own interpreter, the runtime of
2026; XNNPACK on CPU): `load_litert`.

A file with tf-text's custom ops (a string-input file) loads in
`ai_edge_litert.interpreter.InterpreterWithCustomOps` with
`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS` as its op registerers; TensorFlow's own
`tf.lite.Interpreter` is deprecated and takes no registerers.

`LiteRTModel.predict(dataset)` runs the file over a tf.data of feature batches, one example at
a time (the file's inputs are [1, ...]), returning what a Keras model's `predict` returns for
the file's outputs: the tasks' `evaluate` (dev metrics) runs on it unchanged.
"""

from __future__ import annotations

import contextlib
import difflib

import numpy as np

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.core.native_stderr import quiet_native_stderr
from albert_tf.deploy.tflite_model import operators

PASSTHROUGH = ("unique_ids",)  # features the tasks' post-processing reads back from outputs


INSTALL_HINT = 'pip install ai-edge-litert (or pip install "albert_tf[deploy]")'
TFLITE_IDENTIFIER = b"TFL3"  # the flatbuffer file identifier of every LiteRT model (bytes 4-8)


def check_litert_bytes(data: bytes, what="path") -> dict:
    """The operators of a LiteRT model's bytes (`tflite_model.operators`), after checking they
    are one: an empty, truncated or other file (ONNX, a SavedModel's .pb) is a ValueError
    naming `what` and what fits, not a struct.error from the scan.

    Raises:
        InputError: The bytes are no complete LiteRT model.

    >>> check_litert_bytes(b"", "path model.tflite")
    Traceback (most recent call last):
    ...
    albert_tf.core.errors.InputError: path model.tflite: an empty file, not a LiteRT model ...
    """
    if not data:
        raise InputError(f"{what}: an empty file, not a LiteRT model (a .tflite file)")
    if data[4:8] != TFLITE_IDENTIFIER:
        onnx = b"onnx" in data[:64].lower() or b"pytorch" in data[:64]
        looks = "; it looks like ONNX: run it with onnxruntime" if onnx else ""
        raise InputError(
            f"{what}: not a LiteRT model (no TFL3 identifier{looks}); load_litert takes a "
            ".tflite file (export_litert's)"
        )
    try:
        return operators(data)
    except Exception as e:  # noqa: BLE001  struct.error, IndexError, ...: a cut-off file
        raise InputError(
            f"{what}: a truncated or damaged LiteRT model ({len(data):,} bytes; "
            f"{type(e).__name__}); export it again"
        ) from None


def interpreter(data: bytes, num_threads=None):
    """An ai-edge-litert interpreter of a model's bytes, tf-text's ops registered when the
    model uses custom ops (a string-input file)."""
    try:
        # deferred: an optional package (the deploy extra)
        from ai_edge_litert.interpreter import Interpreter, InterpreterWithCustomOps
    except ImportError as e:
        raise ImportError(f"running a LiteRT file needs ai-edge-litert: {INSTALL_HINT}") from e

    if any(name.startswith("CUSTOM:") for name in check_litert_bytes(data, "model")):
        # deferred: tf-text's LiteRT op registerers, only for a file that needs them
        from tensorflow_text import tflite_registrar

        return InterpreterWithCustomOps(
            model_content=data,
            custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS,
            num_threads=num_threads,
        )
    return Interpreter(model_content=data, num_threads=num_threads)


class LiteRTModel:
    """A LiteRT file's `serving_default` signature, callable on NumPy arrays.

    Attributes:
        input_names: The signature's inputs.
        input_shapes: {name: shape} of each input ([1, ...]).
        output_names: The signature's outputs.
    """

    def __init__(self, data: bytes, num_threads=None):
        self.interpreter = interpreter(data, num_threads)
        self.runner = self.interpreter.get_signature_runner("serving_default")
        self._delegate_ready = False
        details = self.runner.get_input_details()
        self.input_names = sorted(details)
        self.input_shapes = {name: tuple(d["shape"]) for name, d in details.items()}
        self.input_dtypes = {name: d["dtype"] for name, d in details.items()}
        self.output_names = sorted(self.runner.get_output_details())

    def _feed(self, name, value):
        """One input as the file takes it: its dtype and shape; strings as UTF-8 bytes."""
        dtype, shape = self.input_dtypes[name], self.input_shapes[name]
        value = np.asarray(value)
        if value.size != int(np.prod(shape)):
            raise InputError(
                f"{name}: shape {value.shape} does not fit the file's {list(shape)} (one "
                f"example of {shape[-1]} positions, the max_seq_length it was exported at)"
            )
        if value.dtype.kind in "OSU":
            flat = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in value.ravel()]
            return np.array(flat, dtype=object).reshape(shape)
        return value.astype(dtype).reshape(shape)

    def _check_names(self, inputs):
        """Every input of the file given, and nothing else (a misspelled name is no input)."""
        missing = [n for n in self.input_names if n not in inputs]
        unknown = [n for n in inputs if n not in self.input_shapes]
        if missing or unknown:
            near = {
                n: difflib.get_close_matches(n, missing or self.input_names, 1) for n in unknown
            }
            parts = [f"missing {', '.join(missing)}"] if missing else []
            parts += [
                f"{n!r} is not an input" + (f" (did you mean {near[n][0]!r}?)" if near[n] else "")
                for n in unknown
            ]
            raise InputError(
                f"inputs: {'; '.join(parts)}; the file takes {', '.join(self.input_names)}"
            )

    def __call__(self, **inputs) -> dict:
        """One example: {input: array} → {output: array}, each shaped as the file's.

        Raises:
            InputError: An input missing, one the file does not take, or of the wrong size.
        """
        self._check_names(inputs)
        feeds = {name: self._feed(name, inputs[name]) for name in self.input_shapes}
        # the first call creates XNNPACK's delegate, which says so on stderr
        quiet = contextlib.nullcontext() if self._delegate_ready else quiet_native_stderr()
        with quiet:
            outputs = self.runner(**feeds)
        self._delegate_ready = True
        return {k: np.array(v) for k, v in outputs.items()}

    def run(self, features: dict) -> dict:
        """A batch: {input: [batch, ...]} → {output: [batch, ...]}, one example at a time."""
        count = len(np.asarray(features[self.input_names[0]]))
        rows = [
            self(**{n: np.asarray(features[n])[i] for n in self.input_names}) for i in range(count)
        ]
        out = {k: np.concatenate([r[k] for r in rows]) for k in self.output_names} if rows else {}
        for name in PASSTHROUGH:
            if name in features:
                out[name] = np.asarray(features[name]).reshape(-1)
        return out

    def predict(self, dataset, verbose=0) -> dict:
        """Keras' predict for the tasks' evaluation: a tf.data of feature batches (or
        (features, labels) pairs) → {output: array [examples, ...]}; `verbose` is ignored."""
        del verbose
        parts = []
        for batch in dataset:
            features = batch[0] if isinstance(batch, tuple) else batch
            parts.append(self.run({k: np.asarray(v) for k, v in features.items()}))
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}


def load_litert(path, num_threads=None) -> LiteRTModel:
    """Load a LiteRT file written by `export_litert` into ai-edge-litert's interpreter.

    Args:
        path: The .tflite file (any filesystem).
        num_threads: CPU threads for the interpreter (None: its default).

    Returns:
        A LiteRTModel: call it with one example's inputs, `run` a batch, `predict` a tf.data.

    Raises:
        InputError: `path` is missing, empty, cut off or not a LiteRT file (e.g. ONNX).
        ImportError: ai-edge-litert is not installed (the message says how to install it).

    >>> import numpy as np, albert_tf
    >>> model = albert_tf.AlbertModel(albert_tf.AlbertConfig.from_json_file(
    ...     "tests/data/fixtures/albert_tiny/albert_config.json"))
    >>> _ = albert_tf.export_litert(model, "ram://doc/encoder.tflite", max_seq_length=8)
    >>> lite = albert_tf.load_litert("ram://doc/encoder.tflite")
    >>> ids = np.array([[2, 10, 11, 3, 0, 0, 0, 0]], np.int32)
    >>> out = lite(input_ids=ids, input_mask=(ids > 0).astype(np.int32),
    ...            segment_ids=np.zeros_like(ids))
    >>> out["pooled_output"].shape
    (1, 32)
    """
    try:
        data = fileio.read_bytes(path)
    except (FileNotFoundError, IsADirectoryError) as e:
        raise InputError(f"path {path}: no such LiteRT file ({type(e).__name__})") from None
    check_litert_bytes(data, f"path {path}")
    return LiteRTModel(data, num_threads)
