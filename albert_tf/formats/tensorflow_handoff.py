"""A model's TensorFlow-only export run from another Keras backend (JAX): the model is handed to
a TensorFlow-backend process (`core.tensorflow_process`) as its class, its config and a TF1
checkpoint of its weights (Google's names, lossless), rebuilt there, and a named export function
is applied to it. `export_tfhub` and `export_onnx` hand off this way when called on JAX, so
`python -m albert_tf.convert` writes the same files on either backend.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os

from albert_tf.core import fileio
from albert_tf.core.errors import TrainingError
from albert_tf.core.tensorflow_process import failure_line, run_in_tensorflow
from albert_tf.formats.tf1 import load_original_checkpoint, save_original_checkpoint
from albert_tf.modeling.model_kinds import model_classes

HANDOFF_FILE = "handoff.json"  # {"class", "config", "checkpoint", "function", "args"}
# what the TensorFlow process runs: argv = the handoff file
_CHILD = (
    "import sys\n"
    "from albert_tf.formats.tensorflow_handoff import run_handoff\n"
    "print(run_handoff(sys.argv[1]))\n"
)


def call_in_tensorflow(model, function: str, *args):
    """`function(model, *args)` run in a TensorFlow-backend process on a copy of `model`.

    Args:
        model: An albert_tf model of a class `modeling.model_kinds.model_classes` names
            (an encoder, a pretrainer or a task model; a text model goes as the ids-level
            model it extends). What the function writes must be on a filesystem both
            processes see (not ram://).
        function: `"module:name"` of the function to apply, e.g.
            `"albert_tf.deploy.onnx:export_onnx"`; it takes the model first.
        *args: Its other arguments, JSON values (paths as strings).

    Returns:
        What the function returned, through JSON (a dataclass as a dict).

    Raises:
        ValueError: A model of no class the handoff rebuilds.
        TrainingError: The TensorFlow process failed (one line: what it said last).

    Example (in a JAX process; what `export_onnx` does there):

        path = call_in_tensorflow(model, "albert_tf.deploy.onnx:export_onnx", "model.onnx")
    """
    classes = model_classes()
    # a text model (its preprocessor inside) goes as the ids-level model it extends
    name = next((c.__name__ for c in type(model).__mro__ if c.__name__ in classes), None)
    if name is None:
        raise ValueError(
            f"model: a {type(model).__name__} has no way into a TensorFlow process; hand over "
            f"one of {', '.join(classes)}"
        )
    config = dict(model.get_config())
    config.pop("preprocessor", None)
    with fileio.scratch_folder() as scratch:
        checkpoint = os.path.join(scratch, "model.ckpt")
        save_original_checkpoint(model, checkpoint)
        spec = {
            "class": name,
            "config": config,
            "checkpoint": checkpoint,
            "function": function,
            "args": list(args),
        }
        handoff = os.path.join(scratch, HANDOFF_FILE)
        fileio.write_text(handoff, json.dumps(spec, default=str))
        run = run_in_tensorflow(["-c", _CHILD, handoff])
    if run.returncode != 0:
        raise TrainingError(
            f"{function.split(':')[-1]}: its TensorFlow process failed: {failure_line(run)}"
        )
    return json.loads(run.stdout.strip().splitlines()[-1])


def run_handoff(handoff_file) -> str:
    """The TensorFlow process's side of `call_in_tensorflow`: rebuilds the model, loads its
    weights, applies the function.

    Args:
        handoff_file: The handoff's JSON file (see HANDOFF_FILE).

    Returns:
        The function's result as one line of JSON.
    """
    spec = json.loads(fileio.read_text(handoff_file))
    model = model_classes()[spec["class"]].from_config(spec["config"])
    load_original_checkpoint(model, spec["checkpoint"])
    module, name = spec["function"].split(":")
    result = getattr(importlib.import_module(module), name)(model, *spec["args"])
    if dataclasses.is_dataclass(result):
        result = dataclasses.asdict(result)
    return json.dumps(result, default=str)
