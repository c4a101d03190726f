"""ONNX export of albert_tf's ids-level models: `export_onnx(model, path)`, for ONNX Runtime,
OpenVINO or any ONNX runtime (docs/deployment.md).

The file takes the model's int32 [batch, length] features by their names (`input_ids`,
`input_mask`, `segment_ids`; also `masked_lm_positions` for AlbertPretrainer and `p_mask` for
AlbertSquadV2), any batch and length, and gives the model's outputs by their names (a list output
spread to `name_0`, `name_1`, ... as in SavedModel exports). It is converted by tf2onnx from a
tf.function of the model's inference call, its variables frozen into the file.

`optimize=True` converts the encoder in the form of `albert_tf.deploy.onnx_encoder` (the same
function, equal to ≤1e-5) and runs ONNX Runtime's transformer optimizer on it: Attention,
SkipLayerNormalization and FastGelu nodes of ONNX Runtime's `com.microsoft` domain, so the file
then runs in ONNX Runtime only. It is off by default: on a 2-core CPU at ALBERT-base shape the
fused graph ran no faster than the plain one (the matrix products take over 80% of the time in
both), and the plain file is standard ONNX that OpenVINO reads too.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os

import keras
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.native_stderr import quiet_native_stderr
from albert_tf.deploy.onnx_encoder import fusable_outputs
from albert_tf.formats.tensorflow_handoff import call_in_tensorflow
from albert_tf.modeling.model_base import flat_outputs
from albert_tf.modeling.model_kinds import find_kind

MIN_OPSET = 17  # LayerNormalization is a standard op from 17 on; tf2onnx 1.17 writes up to 18
INPUT_AXES = {"masked_lm_positions": ("batch", "predictions")}  # others: (batch, sequence)
INSTALL_HINT = "pip install 'albert_tf[deploy]' (tf2onnx, onnx, onnxruntime)"
# what ONNX Runtime's transformer optimizer imports (optimize=True)
OPTIMIZER_PACKAGES = ("onnxruntime", "sympy")


def _check_model(model):
    """The one ValueError for a model this export cannot write."""
    if find_kind(model) is None:  # every kind has an ids-level signature (modeling.model_kinds)
        raise ValueError(
            f"model: export_onnx writes albert_tf's ids-level models (AlbertModel, "
            f"AlbertClassifier, AlbertTokenClassifier, AlbertSquadV1/V2, AlbertMultipleChoice, "
            f"AlbertPretrainer), not a {type(model).__name__}"
        )
    dtype = keras.backend.standardize_dtype(model.compute_dtype)
    if dtype != "float32":
        raise ValueError(
            f"model: its dtype policy computes in {dtype}; export_onnx writes float32 models: "
            "load the weights into a model built under the float32 policy"
        )


def _check_opset(opset, most):
    if not isinstance(opset, int) or isinstance(opset, bool) or not MIN_OPSET <= opset <= most:
        raise ValueError(
            f"opset: {opset!r} is not an ONNX opset export_onnx writes; use {MIN_OPSET} to {most}"
        )


def serving_function(model, optimize=False):
    """(tf.function, input signature) of `model`'s inference on its serving features, outputs
    flattened (`flat_outputs`); with `optimize` the encoder in the fusable form."""
    specs = model.serving_input_signature()[0]
    names = list(specs)
    signature = [specs[name] for name in names]
    forward = (
        (lambda f: fusable_outputs(model, f)) if optimize else (lambda f: model(f, training=False))
    )

    @tf.function(input_signature=signature, autograph=False)
    def serve(*tensors):
        return flat_outputs(forward(dict(zip(names, tensors))))

    return serve, signature


def _optimized(proto, config):
    """ONNX Runtime's transformer optimizer (python fusions only: the file stays portable
    across CPUs) on `proto`; the stacked attention weights kept once."""
    # deferred: an optional package (the `deploy` extra)
    from onnxruntime.transformers.optimizer import optimize_model

    # deferred: needs onnx, an optional package
    from albert_tf.deploy.onnx_passes import share_equal_initializers

    quiet = logging.getLogger("onnxruntime.transformers.optimizer")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "Model producer not matched": tf2onnx, not pytorch, as meant
    try:
        optimized = optimize_model(
            proto,
            model_type="bert",
            num_heads=config.num_attention_heads,
            hidden_size=config.hidden_size,
            opt_level=0,
        )
    finally:
        quiet.setLevel(level)
    fused = {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}
    share_equal_initializers(optimized.model)
    return optimized.model, fused


def _optimizer_needs(package) -> str:
    return (
        f"export_onnx(optimize=True) needs {package} (ONNX Runtime's transformer optimizer "
        f"imports it): pip install {package}"
    )


def _checked(model, opset, optimize):
    """export_onnx's checks of its arguments and packages, before any work; returns tf2onnx."""
    _check_model(model)
    for package in OPTIMIZER_PACKAGES if optimize else ():
        if importlib.util.find_spec(package) is None:  # before the conversion's minutes
            raise ImportError(_optimizer_needs(package))
    try:
        # deferred: an optional package (the `deploy` extra)
        import onnx  # noqa: F401  what onnx_passes needs

        # deferred: an optional package (the `deploy` extra)
        import tf2onnx
    except ImportError as e:
        raise ImportError(f"export_onnx needs tf2onnx and onnx: {INSTALL_HINT}") from e
    _check_opset(opset, max(tf2onnx.constants.OPSET_TO_IR_VERSION))
    return tf2onnx


def onnx_proto(model, *, opset=MIN_OPSET, optimize=False):
    """The ONNX ModelProto export_onnx writes (see export_onnx)."""
    tf2onnx = _checked(model, opset, optimize)
    # deferred: needs onnx, an optional package (checked above)
    from albert_tf.deploy.onnx_passes import name_input_axes, restore_reduce_means

    serve, signature = serving_function(model, optimize)
    with quiet_native_stderr():  # grappler's "Starting new session" lines, twice
        proto, _ = tf2onnx.convert.from_function(serve, input_signature=signature, opset=opset)
    restore_reduce_means(proto, opset)
    fused = {}
    if optimize:
        try:
            proto, fused = _optimized(proto, model.config)
        except ImportError as e:
            raise ImportError(_optimizer_needs(e.name or "onnxruntime")) from e
    name_input_axes(proto, by_input=INPUT_AXES)
    proto.doc_string = f"albert_tf {type(model).__name__}, export_onnx(optimize={optimize})"
    meta = {
        "albert_tf.model": type(model).__name__,
        "albert_tf.config": model.config.to_json_string(),
    }
    meta["albert_tf.fused"] = json.dumps(fused, sort_keys=True)
    proto.metadata_props.extend(_props(meta))
    return proto


def _props(meta):
    # deferred: needs onnx, an optional package
    from onnx import StringStringEntryProto

    return [StringStringEntryProto(key=k, value=v) for k, v in meta.items()]


def export_onnx(model, path, *, opset=MIN_OPSET, optimize=False):
    """Write `model` as an ONNX file for ONNX Runtime, OpenVINO or another ONNX runtime.

    Inputs are the model's int32 [batch, length] features by name (`input_ids`, `input_mask`,
    `segment_ids`, plus `masked_lm_positions` for AlbertPretrainer and `p_mask` for
    AlbertSquadV2), any batch and length; outputs are the model's, by name (a list spread to
    `name_0`, `name_1`, ...), float32, equal to Keras to ≤1e-4. The text models
    (AlbertTextClassifier, ...) export their feature path: tokenize with their preprocessor
    first. Needs tf2onnx and onnx (and onnxruntime for `optimize`): the `deploy` extra. On a
    Keras backend other than TensorFlow (JAX) a TensorFlow process writes the same file
    (`formats.tensorflow_handoff`).

    Args:
        model: an albert_tf ids-level model in float32: AlbertModel, AlbertClassifier (single-,
            multi-label or regression), AlbertTokenClassifier, AlbertSquadV1, AlbertSquadV2,
            AlbertMultipleChoice or AlbertPretrainer.
        path: the `.onnx` file to write, on any filesystem albert_tf writes (local, gs://,
            ram://); written whole or not at all.
        opset: the ONNX opset, 17 (the default) or above, as far as tf2onnx goes.
        optimize: also fuse the graph with ONNX Runtime's transformer optimizer (Attention,
            SkipLayerNormalization, FastGelu in the `com.microsoft` domain: the file then runs
            in ONNX Runtime only). Off by default: it ran no faster on a 2-core CPU
            (docs/deployment.md).

    Returns:
        `path`, as a string.

    Raises:
        ValueError: naming `model` (not an ids-level albert_tf model, or not float32), `opset`
            or `path` (empty, or a folder) when it cannot be exported so.
        ImportError: when tf2onnx / onnx (or onnxruntime and sympy for `optimize`) are not
            installed, naming the package.

    Example:

    >>> import numpy as np, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> model = albert_tf.AlbertClassifier(config, num_labels=3)
    >>> albert_tf.export_onnx(model, "ram://onnx/classifier.onnx")
    'ram://onnx/classifier.onnx'
    >>> import onnxruntime
    >>> from albert_tf.core import fileio
    >>> session = onnxruntime.InferenceSession(fileio.read_bytes("ram://onnx/classifier.onnx"))
    >>> ids = np.array([[2, 10, 11, 3]], np.int32)
    >>> features = {"input_ids": ids, "input_mask": np.ones_like(ids),
    ...             "segment_ids": np.zeros_like(ids)}
    >>> logits, = session.run(["logits"], features)
    >>> bool(np.allclose(logits, model(features)["logits"], atol=1e-5))
    True
    """
    path = os.fspath(path)
    if not path:
        raise ValueError("path: empty; give the .onnx file to write")
    if fileio.isdir(path):
        raise ValueError(
            f"path: {path} is a folder; give the .onnx file to write, e.g. "
            f"{fileio.join(path, 'model.onnx')}"
        )
    if keras.backend.backend() != "tensorflow":  # tf2onnx converts TensorFlow graphs
        _checked(model, opset, optimize)
        with fileio.scratch_folder() as scratch:
            local = os.path.join(scratch, "model.onnx")
            call_in_tensorflow(model, f"{__name__}:export_onnx_file", local, opset, optimize)
            return fileio.write_bytes(path, fileio.read_bytes(local))
    proto = onnx_proto(model, opset=opset, optimize=optimize)
    return fileio.write_bytes(path, proto.SerializeToString())


def export_onnx_file(model, path, opset=MIN_OPSET, optimize=False) -> str:
    """`export_onnx` with positional options: what a TensorFlow process runs for a JAX one
    (`formats.tensorflow_handoff.call_in_tensorflow` passes arguments by position).

    Args:
        model: As export_onnx's.
        path: A local `.onnx` file.
        opset: As export_onnx's.
        optimize: As export_onnx's.

    Returns:
        `path`.
    """
    return export_onnx(model, path, opset=opset, optimize=optimize)
