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

import numpy as np

from albert_tf.core import fileio
from albert_tf.core.native_stderr import quiet_native_stderr
from albert_tf.deploy.tflite_model import operators

PASSTHROUGH = ("unique_ids",)  # features the tasks' post-processing reads back from outputs


def interpreter(data: bytes, num_threads=None):
    """An ai-edge-litert interpreter of a model's bytes, tf-text's ops registered when the
    model uses custom ops (a string-input file)."""
    # deferred: an optional package (the deploy extra)
    from ai_edge_litert.interpreter import Interpreter, InterpreterWithCustomOps

    if any(name.startswith("CUSTOM:") for name in operators(data)):
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
        if value.dtype.kind in "OSU":
            flat = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in value.ravel()]
            return np.array(flat, dtype=object).reshape(shape)
        return value.astype(dtype).reshape(shape)

    def __call__(self, **inputs) -> dict:
        """One example: {input: array} → {output: array}, each shaped as the file's."""
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
    return LiteRTModel(fileio.read_bytes(path), num_threads)
