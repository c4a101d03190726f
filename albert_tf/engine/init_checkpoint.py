"""Initialising a model from a checkpoint before training: Google's TF1 checkpoints or our own
object checkpoints, refusing one that would leave encoder variables random."""
from absl import logging
import tensorflow as tf


def init_from_checkpoint(model, path, **kwargs):
    """Initialise from a Google TF1 checkpoint (names `bert/...`) or one of our object
    checkpoints (restored by attribute path, e.g. the `.albert` encoder of any task model).

    The load report (loaded / missing / unused) is always logged; a path that is not a
    checkpoint, or one that lacks encoder variables the model needs, raises InputError."""
    from albert_tf.formats.tf1 import load_original_checkpoint, resolve_checkpoint_path
    from albert_tf.errors import InputError
    try:
        path = resolve_checkpoint_path(path)
    except FileNotFoundError as e:
        raise InputError(f"--init_checkpoint: {e}") from None
    names = tf.train.load_checkpoint(path).get_variable_to_shape_map()
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
        return _init_from_object_checkpoint(model, path, names)
    report = load_original_checkpoint(model, path, **kwargs)
    logging.info("%s", report)
    return report


def _init_from_object_checkpoint(model, path, names):
    """Restore an object checkpoint, after checking it holds every encoder variable."""
    from albert_tf.errors import InputError
    encoder = getattr(model, "albert", model)
    prefix = "model/albert/" if encoder is not model else "model/"
    suffix = "/.ATTRIBUTES/VARIABLE_VALUE"
    found = [n for n in names if n.startswith(prefix) and n.endswith(suffix)
             and ".OPTIMIZER_SLOT" not in n]
    needed = len(encoder.weights)
    logging.info("object checkpoint %s: %d of the model's %d encoder variables present, "
                 "%d checkpoint variables in all", path, len(found), needed, len(names) - 1)
    if len(found) < needed:
        raise InputError(f"checkpoint {path} holds {len(found)} of the {needed} encoder "
                         "variables the model needs; the others would stay random")
    tf.train.Checkpoint(model=model).restore(path).expect_partial()
    return None
