"""The training state as one `.npz` file: the checkpoint format of runs on Keras' JAX backend.

tf.train.Checkpoint holds only TensorFlow trackables; a Keras variable on the JAX backend is
none. A run there writes `ckpt-<step>.weights.npz` beside the same `checkpoint` state file
(the completion marker, rewritten only after the file is whole) that a TensorFlow run writes
beside its `ckpt-<step>.index`. The file holds, in order and by Keras path, every variable of
the model (weights and the dropout seed states: a resumed run draws the same masks) and of its
optimizer (the step count, the moments, the micro-step and accumulators), plus the lists of
their paths and shapes, checked before anything is assigned. It goes through the file layer,
so ram:// and gs:// work as a local folder does.
"""

from __future__ import annotations

import json

import keras
import numpy as np

from albert_tf.core import fileio

DATA_SUFFIX = ".weights.npz"  # ckpt-<step> + this: the one file of a JAX-backend checkpoint


def uses_variable_checkpoints() -> bool:
    """True when the engine checkpoints through `VariableCheckpoint` (any backend but TF).

    Returns:
        bool: whether Keras' backend is other than TensorFlow.

    Example:

    >>> from albert_tf.engine.variable_checkpoint import uses_variable_checkpoints
    >>> import keras
    >>> uses_variable_checkpoints() == (keras.backend.backend() != "tensorflow")
    True
    """
    return keras.backend.backend() != "tensorflow"


def checkpoint_file(prefix) -> str:
    """The file of the checkpoint `prefix` (e.g. `out/ckpt-6` -> `out/ckpt-6.weights.npz`).

    Args:
        prefix: str. The checkpoint's path without suffix.

    Returns:
        str: the `.npz` path.

    Example:

    >>> from albert_tf.engine.variable_checkpoint import checkpoint_file
    >>> checkpoint_file("out/ckpt-6")
    'out/ckpt-6.weights.npz'
    """
    return str(prefix) + DATA_SUFFIX


class VariableCheckpoint:
    """The model's and its optimizer's variables, written to and restored from one `.npz`.

    Args:
        model: keras.Model. A built model; its optimizer, if any, built too.

    Example:

    >>> import tempfile, os, keras, numpy as np
    >>> from albert_tf.engine.variable_checkpoint import VariableCheckpoint
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer="adam")
    >>> model.optimizer.build(model.trainable_variables)
    >>> prefix = os.path.join(tempfile.mkdtemp(), "ckpt-0")
    >>> VariableCheckpoint(model).write(prefix).endswith("ckpt-0.weights.npz")
    True
    >>> kernel = np.asarray(model.weights[0]).copy()
    >>> _ = model.weights[0].assign(np.zeros((3, 2)))
    >>> VariableCheckpoint(model).restore(prefix)
    >>> bool(np.array_equal(np.asarray(model.weights[0]), kernel))
    True
    """

    def __init__(self, model):
        self.model = model

    def _sync(self):
        """Brings the JAX trainer's state (held apart from the variables during fit) back."""
        sync = getattr(self.model, "jax_state_sync", None)
        if sync is not None:
            sync()

    def _groups(self) -> dict:
        optimizer = getattr(self.model, "optimizer", None)
        return {
            "model": list(self.model.variables),
            "optimizer": list(optimizer.variables) if optimizer is not None else [],
        }

    def write(self, prefix) -> str:
        """Writes every variable to `prefix` + `.weights.npz` (through the file layer).

        Args:
            prefix: str. The checkpoint's path without suffix, e.g. `out/ckpt-6`.

        Returns:
            str: the file written.
        """
        self._sync()
        arrays, index = {}, {}
        for group, variables in self._groups().items():
            index[group] = [[v.path, list(v.shape)] for v in variables]
            for i, v in enumerate(variables):
                arrays[f"{group}/{i}"] = keras.ops.convert_to_numpy(v.value)
        arrays["index"] = np.frombuffer(json.dumps(index).encode(), np.uint8)
        return fileio.write_npz(checkpoint_file(prefix), arrays)

    def restore(self, prefix, *, model_only=False):
        """Assigns the variables saved at `prefix`, after checking that they match.

        Args:
            prefix: str. The checkpoint's path without suffix.
            model_only: bool. Restore the model's variables only (initialising a new run from
                another run's checkpoint); matched by Keras path (the encoder's are the same
                in every task model), the saved model may hold others (another head).
                Default False.

        Returns:
            With `model_only`: the paths of the model's variables the file lacks; else None.

        Raises:
            ValueError: when the file is unreadable or its variables do not match the model's
                (names, count or shapes).
        """
        try:
            saved = fileio.read_npz(checkpoint_file(prefix))
            index = json.loads(bytes(saved.pop("index")).decode())
        except (OSError, ValueError, KeyError, EOFError) as e:
            raise ValueError(f"unreadable ({type(e).__name__}: {e})") from None
        if model_only:
            return self._restore_model_by_path(saved, index)
        pairs = []
        for group, variables in self._groups().items():
            held = index.get(group, [])
            wanted = [[v.path, list(v.shape)] for v in variables]
            if held != wanted:
                diff = next((h, w) for h, w in zip(held + [None] * len(wanted), wanted) if h != w)
                raise ValueError(
                    f"its {group} variables do not match: {len(held)} saved, {len(wanted)} "
                    f"here; first difference: saved {diff[0]}, here {diff[1]}"
                )
            pairs += [(v, saved[f"{group}/{i}"]) for i, v in enumerate(variables)]
        for variable, value in pairs:
            variable.assign(value)

    def _restore_model_by_path(self, saved, index):
        by_path = {path: (i, shape) for i, (path, shape) in enumerate(index["model"])}
        missing = []
        for v in self.model.variables:
            entry = by_path.get(v.path)
            if entry is None or entry[1] != list(v.shape):
                missing.append(v.path)
                continue
            v.assign(saved[f"model/{entry[0]}"])
        return missing
