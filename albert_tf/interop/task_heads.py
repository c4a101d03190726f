"""Which model a checkpoint holds, so a converter rebuilds a fine-tuned model with its head.

A driver's output folder names its model in run_summary.json (class, constructor arguments,
labels). Without one, a TF1 checkpoint's variables tell the SQuAD heads and the pretraining
heads apart, but not the pooled heads (`output_weights` [n, H]): a classifier, a regression, a
multi-label classifier, a token classifier and a multiple-choice scorer store the same names,
so the user says which with `--model`.
"""

from __future__ import annotations

from typing import Optional

import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.core.saved_model_proto import checkpoint_reader
from albert_tf.engine.run_summary import SUMMARY_FILE, read_run_summary
from albert_tf.formats.common import rename
from albert_tf.formats.huggingface import hf_state
from albert_tf.formats.keras_hub import RULES as KERAS_HUB_RULES
from albert_tf.formats.tf1 import (
    BEST_CHECKPOINT,
    LoadReport,
    load_original_checkpoint,
    resolve_checkpoint_path,
)
from albert_tf.modeling.model_kinds import (
    KINDS,
    MODEL_KINDS,
    POOLED_KINDS,
    kinds_holding,
    model_classes,
)
from albert_tf.modeling.names import original_variable_map


def run_folder_of(path) -> Optional[str]:
    """The driver output folder `path` is, or holds a checkpoint of (it has run_summary.json).

    Args:
        path: A folder, or a checkpoint prefix or file.

    Returns:
        The folder, or None when `path` is not part of a driver run.
    """
    path = str(path)
    for folder in (path, fileio.dirname(fileio.abspath(path))):
        if fileio.is_folder(folder) and fileio.exists(fileio.join(folder, SUMMARY_FILE)):
            return folder
    return None


def run_checkpoint(folder) -> str:
    """The checkpoint of a driver run to convert: model.ckpt-best, else the newest ckpt-N.

    Args:
        folder: A driver's output folder.

    Returns:
        A checkpoint prefix.

    Raises:
        InputError: The folder holds no checkpoint.
    """
    best = fileio.join(folder, BEST_CHECKPOINT)
    if fileio.exists(best + ".index"):
        return best
    steps = []
    for name in fileio.listdir(folder):
        stem = name[: -len(".index")] if name.endswith(".index") else ""
        if stem.startswith("ckpt-") and stem[5:].isdigit():
            steps.append(int(stem[5:]))
    if not steps:
        raise InputError(f"input_path {folder}: the run folder holds no checkpoint yet")
    return fileio.join(folder, f"ckpt-{max(steps)}")


def model_from_run(folder):
    """The model a driver run trained, built (untrained) from its run_summary.json.

    Args:
        folder: A driver's output folder.

    Returns:
        (model, labels): the Keras model with the run's head, and the label names (or None).

    Raises:
        InputError: The summary names no model albert_tf can build.
    """
    summary = read_run_summary(folder) or {}
    spec = summary.get("model") or {}
    cls = model_classes().get(spec.get("class"))
    if cls is None or not spec.get("config"):
        raise InputError(
            f"input_path {folder}: {SUMMARY_FILE} names no model albert_tf can rebuild "
            f"({spec.get('class')!r}); pass model_kind and albert_config_file"
        )
    config = dict(spec["config"])
    config.pop("preprocessor", None)
    model = cls.from_config(config)
    labels = spec.get("labels")
    if labels and hasattr(model, "label_names") and not getattr(model, "label_names", None):
        model.label_names = list(labels)
    return model, labels


def pooled_head_shape(checkpoint) -> Optional[tuple]:
    """The shape of a checkpoint's root `output_weights` (a pooled task head), or None.

    Args:
        checkpoint: A TF1 checkpoint prefix, file or folder.

    Returns:
        (outputs, hidden) or None.
    """
    shapes = checkpoint_reader(resolve_checkpoint_path(checkpoint)).get_variable_to_shape_map()
    shape = shapes.get("output_weights")
    return tuple(shape) if shape is not None else None


def head_kind(checkpoint) -> str:
    """What the head variables of a TF1 checkpoint say it holds.

    Args:
        checkpoint: A TF1 checkpoint prefix, file or folder.

    Returns:
        "squad_v1", "squad_v2", "pooled" (a fine-tuned pooled head: which task is unknown),
        "pretrainer" (MLM or SOP head) or "encoder" (no head).
    """
    names = checkpoint_reader(resolve_checkpoint_path(checkpoint)).get_variable_to_shape_map()
    kinds = kinds_holding(names)
    return "pooled" if len(kinds) > 1 else kinds[0]


def model_for_kind(kind: str, config, checkpoint=None):
    """A fresh model of `kind` (a --model value) for `config`; pooled heads take their size
    from the checkpoint's `output_weights`.

    Args:
        kind: One of `MODEL_KINDS`.
        config: The AlbertConfig.
        checkpoint: The checkpoint the model will load (for a pooled head's size).

    Returns:
        The Keras model.

    Raises:
        InputError: An unknown kind, or a pooled kind for a checkpoint without a pooled head.
    """
    if kind not in MODEL_KINDS:
        raise InputError(f"model_kind {kind!r} is unknown; use one of {', '.join(MODEL_KINDS)}")
    spec = KINDS[kind]
    if not spec.pooled:
        return spec.build(config)
    shape = pooled_head_shape(checkpoint) if checkpoint is not None else None
    if shape is None:
        raise InputError(
            f"model_kind {kind}: the input holds no task head (no output_weights) to convert"
        )
    return spec.build(config, shape[0] if spec.sized_by_head else None)


def ambiguous_head_error(checkpoint) -> InputError:
    """The error for a fine-tuned pooled head whose task nothing names.

    Args:
        checkpoint: The checkpoint.

    Returns:
        The InputError to raise.
    """
    shape = pooled_head_shape(checkpoint)
    return InputError(
        f"input_path {checkpoint} holds a fine-tuned task head (output_weights {list(shape)}) and "
        f"no {SUMMARY_FILE} beside it says which task: convert the run's output folder, or pass "
        f"model_kind {' | '.join(POOLED_KINDS)} (or model_kind encoder to keep the encoder only)"
    )


def load_checkpoint_into(model, checkpoint, require_encoder: bool = True):
    """Loads a TF1 checkpoint (Google's names) or a driver's object checkpoint (ckpt-N) into
    `model`, every variable or an error.

    Args:
        model: The model to fill.
        checkpoint: A checkpoint prefix, file or folder.
        require_encoder: Refuse a TF1 checkpoint that lacks encoder variables.

    Returns:
        The LoadReport (for an object checkpoint: every model variable loaded).

    Raises:
        InputError: An object checkpoint that does not hold every variable of `model`.
    """
    path = resolve_checkpoint_path(checkpoint)
    names = checkpoint_reader(path).get_variable_to_shape_map()
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in names:
        return load_original_checkpoint(model, path, require_encoder=require_encoder)
    try:
        tf.train.Checkpoint(model=model).restore(
            path
        ).expect_partial().assert_existing_objects_matched()
    except AssertionError as e:
        raise InputError(
            f"input_path {path}: the checkpoint does not hold every variable of "
            f"{type(model).__name__} ({str(e).splitlines()[0][:200]})"
        ) from None
    return LoadReport(path, sorted(original_variable_map(model)), [], [], [])


def left_out_by(model, output_format: str) -> list:
    """The Google names of `model`'s variables that `output_format` has no place for (written
    nowhere: a head the format's model classes lack).

    Args:
        model: The model to write.
        output_format: "tf1", "keras", "keras_hub" or "huggingface".

    Returns:
        The names, sorted (empty when the format keeps everything).
    """
    if output_format == "huggingface":
        return hf_state(model)[1]
    if output_format == "keras_hub":
        return sorted(n for n in original_variable_map(model) if rename(n, KERAS_HUB_RULES) is None)
    return []
