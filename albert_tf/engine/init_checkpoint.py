"""Initialising a model from a checkpoint before training: Google's TF1 checkpoints, Google's TF2
releases (a TF Hub / Kaggle SavedModel folder, a Model Garden TF2 checkpoint) or our own object
checkpoints, refusing one that would leave encoder variables random."""

import re

from absl import logging
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.engine.save_points import latest_checkpoint
from albert_tf.engine.variable_checkpoint import (
    VariableCheckpoint,
    checkpoint_file,
    uses_variable_checkpoints,
)
from albert_tf.formats.tf1 import load_original_checkpoint, resolve_checkpoint_path
from albert_tf.formats.tfhub import load_tfhub, source_kind


def init_from_checkpoint(model, path, **kwargs):
    """Initialise from a Google TF1 checkpoint (names `bert/...`), a TF Hub SavedModel folder
    or Model Garden TF2 checkpoint (formats/tfhub.py), or one of our object checkpoints
    (restored by attribute path, e.g. the `.albert` encoder of any task model).

    The load report (loaded / missing / unused) is always logged; a path that is not a
    checkpoint, or one that lacks encoder variables the model needs, raises InputError."""
    if source_kind(path) is not None:
        _, report = load_tfhub(path, model)
        logging.info("%s", report)
        return report
    if uses_variable_checkpoints():
        run_checkpoint = _variable_checkpoint_of(path)
        if run_checkpoint:
            return _init_from_variable_checkpoint(model, run_checkpoint)
    try:
        path = resolve_checkpoint_path(path)
    except FileNotFoundError as e:
        raise InputError(f"init_checkpoint: {e}") from None
    names = tf.compat.v1.train.NewCheckpointReader(path).get_variable_to_shape_map()  # ram:// too
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
        return _init_from_object_checkpoint(model, path, names)
    report = load_original_checkpoint(model, path, **kwargs)
    logging.info("%s", report)
    return report


def _init_from_object_checkpoint(model, path, names):
    """Restore an object checkpoint, after checking it holds every encoder variable.

    The check follows the checkpoint's object graph (model → albert → ...), not the variable
    names: a variable is stored once, under the first path that reaches it (often the
    optimizer's `_trainable_variables/N`), so names alone do not show what a checkpoint holds."""
    encoder = getattr(model, "albert", model)
    root = (
        tf.train.Checkpoint(model=tf.train.Checkpoint(albert=encoder))
        if encoder is not model
        else tf.train.Checkpoint(model=model)
    )
    try:
        root.restore(path).expect_partial().assert_existing_objects_matched()
    except AssertionError as e:
        needed = len(encoder.weights)
        count = re.search(r"Found (\d+) Python objects", str(e))
        first = re.search(r"path=([^,]+)", str(e))
        held = max(0, needed - int(count.group(1))) if count else 0
        raise InputError(
            f"checkpoint {path} holds {held} of the {needed} encoder variables the "
            f"model needs (missing e.g. {first.group(1) if first else '?'}); the "
            "others would stay random"
        ) from None
    logging.info(
        "object checkpoint %s: every encoder variable present (%d checkpoint variables)",
        path,
        len(names) - 1,
    )
    tf.train.Checkpoint(model=model).restore(path).expect_partial()
    return None


def _variable_checkpoint_of(path):
    """The prefix of a JAX-backend run's checkpoint that `path` names (the prefix, its
    `.weights.npz`, or a run folder whose newest checkpoint is one); None otherwise."""
    path = str(path)
    if path.endswith(".weights.npz"):
        path = path[: -len(".weights.npz")]
    if fileio.exists(checkpoint_file(path)):
        return path
    if fileio.is_folder(path):
        return latest_checkpoint(path)
    return None


def _init_from_variable_checkpoint(model, path):
    """The model's variables from a JAX-backend run's checkpoint (engine/variable_checkpoint.py),
    matched by their Keras paths below the model's name; every encoder variable must be there."""
    encoder = getattr(model, "albert", model)
    try:
        missing = VariableCheckpoint(model).restore(path, model_only=True)
    except ValueError as e:
        raise InputError(f"checkpoint {checkpoint_file(path)} is {e}") from None
    needed = {v.path for v in encoder.weights}
    lacking = sorted(needed & set(missing))
    if lacking:
        raise InputError(
            f"checkpoint {checkpoint_file(path)} holds {len(needed) - len(lacking)} of the "
            f"{len(needed)} encoder variables the model needs (missing e.g. {lacking[0]}); the "
            "others would stay random"
        )
    logging.info("run checkpoint %s: every encoder variable present", checkpoint_file(path))
    return None
