"""What the engine does at each save point: write a ckpt-<step> object checkpoint (the index
rewritten only once it is complete), evaluate it, record the results, export the best one.

The `checkpoint` state names checkpoints by their bare names (`ckpt-6`), which
tf.train.latest_checkpoint joins to the folder it is given: a relative, absolute or remote
output_dir resolves from any working folder. On resume the newest checkpoint that restores is
used; a broken one (a truncated data file) is reported by name and the previous one is tried,
never silently step 0.
"""

from __future__ import annotations

import json
import re

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.errors import StorageError, TrainingError
from albert_tf.core.fileio import write_text_atomic
from albert_tf.engine.compiling import one_step_per_call
from albert_tf.engine.fault_injection import kill_point
from albert_tf.engine.results import append_results, format_metrics, format_results, format_value
from albert_tf.engine.variable_checkpoint import checkpoint_file, uses_variable_checkpoints
from albert_tf.formats.tf1 import save_original_checkpoint

BEST_CHECKPOINT = "model.ckpt-best"
EVAL_HISTORY = "eval_history.json"  # every evaluation so far, across restarts


STATE_FILE = "checkpoint"  # the state tf.train.latest_checkpoint reads: the completion marker


def checkpoint_names(directory) -> list:
    """The checkpoints the state of `directory` lists, oldest first, as bare names."""
    try:
        state = tf.train.get_checkpoint_state(directory)
    except Exception as e:  # noqa: BLE001  a garbled state file
        raise StorageError(
            f"checkpoint state {fileio.join(directory, STATE_FILE)} is unreadable "
            f"({type(e).__name__}); delete it to start again from step 0"
        ) from None
    if not state:
        return []
    names = [fileio.basename(p) for p in state.all_model_checkpoint_paths]
    latest = fileio.basename(state.model_checkpoint_path)
    return [n for n in names if n != latest] + [latest]


def checkpoint_exists(prefix) -> bool:
    """Whether the engine's checkpoint `prefix` (e.g. `out/ckpt-6`) is on disk: its `.index`
    on TensorFlow, its `.weights.npz` on the other backends (engine/variable_checkpoint.py)."""
    if uses_variable_checkpoints():
        return fileio.exists(checkpoint_file(prefix))
    return fileio.exists(prefix + ".index")


def latest_checkpoint(directory):
    """The newest complete checkpoint of `directory` as a prefix, or None (what
    tf.train.latest_checkpoint gives on TensorFlow, for this backend's checkpoint files)."""
    if not uses_variable_checkpoints():
        return tf.train.latest_checkpoint(directory)
    names = checkpoint_names(directory) if fileio.isdir(directory) else []
    path = fileio.join(directory, names[-1]) if names else None
    return path if path and checkpoint_exists(path) else None


def write_checkpoint_state(directory, names):
    """The `checkpoint` state with bare names, resolvable from any working folder (TF's own
    update_checkpoint_state records names relative to a relative folder as `../ckpt-5`)."""
    lines = [f'model_checkpoint_path: "{names[-1]}"'] + [
        f'all_model_checkpoint_paths: "{n}"' for n in names
    ]
    fileio.write_text(fileio.join(directory, STATE_FILE), "\n".join(lines) + "\n")


class _CheckpointFiles:
    """ckpt-<step> object checkpoints of one directory. The `checkpoint` state file (what
    tf.train.latest_checkpoint reads) is rewritten only after a checkpoint is complete, so a
    kill during a write leaves the previous checkpoint the latest (on a bucket too)."""

    def __init__(self, checkpoint, directory, keep):
        self.checkpoint, self.directory, self.keep = checkpoint, directory, keep
        if not uses_variable_checkpoints():
            checkpoint.save_counter  # noqa: B018  created now, so `write` saves it and restores match

    def latest(self):
        return latest_checkpoint(self.directory)

    def save(self, step) -> str:
        name = f"ckpt-{step}"
        path = fileio.join(self.directory, name)
        try:
            self.checkpoint.write(path)
            kill_point("checkpoint_written", step)
            old = checkpoint_names(self.directory)
            kept = [p for p in old if p != name][-(self.keep - 1) :] if self.keep > 1 else []
            write_checkpoint_state(self.directory, kept + [name])
            for gone in set(old) - set(kept) - {name}:
                for f in fileio.glob(fileio.join(self.directory, gone) + ".*"):
                    fileio.remove(f)
        except StorageError:
            raise
        except (OSError, tf.errors.OpError) as e:
            raise StorageError(
                f"cannot write checkpoint {path}: {storage_cause(e)}; the last "
                f"complete checkpoint is {self.latest() or 'none'}; free space "
                "or fix access, then run the same command to resume"
            ) from None
        return path


def storage_cause(error) -> str:
    """A filesystem error's cause in a few words (TensorFlow's messages carry op context)."""
    text = str(getattr(error, "message", "") or error).strip().splitlines()
    text = text[0] if text else type(error).__name__
    return re.sub(r"\s*\[Op:[^\]]*\]", "", text)


def restore_latest(checkpoint, directory):
    """Restore the newest checkpoint of `directory` that restores whole; returns its path, or
    None when the folder holds none. A broken one is reported by name and the previous one is
    tried; if every one is broken, a TrainingError (never a silent start from step 0)."""
    names = checkpoint_names(directory) if fileio.isdir(directory) else []
    broken = []
    for name in reversed(names):
        path = fileio.join(directory, name)
        if not checkpoint_exists(path):
            missing = checkpoint_file(path) if uses_variable_checkpoints() else path + ".index"
            broken.append(f"{path} (its {fileio.basename(missing)} is missing)")
            continue
        try:
            if uses_variable_checkpoints():
                checkpoint.restore(path)
            else:
                checkpoint.restore(path).assert_existing_objects_matched()
        except (IndexError, ValueError, AssertionError, tf.errors.OpError) as e:
            broken.append(f"{path} ({storage_cause(e)})")
            logging.warning(
                "checkpoint %s is broken (%s); trying the one before it", path, storage_cause(e)
            )
            continue
        if broken:
            logging.warning(
                "resuming from %s: the newer %s could not be restored", path, "; ".join(broken)
            )
        return path
    if broken:
        raise TrainingError(
            f"no checkpoint in {directory} can be restored: {'; '.join(broken)}; "
            "delete them to start again from step 0"
        )
    return None


class SavePoints:
    """State shared by the callbacks of one `train` call."""

    def __init__(self, model, checkpoint, run, evaluate_fn, export_best_fn, chief, write_dir):
        self.model, self.run, self.evaluate_fn = model, run, evaluate_fn
        self.export_best_fn = export_best_fn
        self.chief, self.write_dir = chief, write_dir
        self.files = _CheckpointFiles(checkpoint, write_dir, run.keep_checkpoint_max)
        self.writer = tf.summary.create_file_writer(fileio.join(write_dir, "eval"))
        self.history = []
        self.best = self._load_best()
        self.last_saved_step = self.step()
        self.failed = False

    def step(self):
        """Optimizer updates so far (with gradient accumulation, one per N micro-batches)."""
        sync = getattr(self.model, "jax_state_sync", None)
        if sync is not None:  # JAX's fit holds the state apart from the variables until synced
            sync()
        return int(self.model.optimizer.iterations.numpy())

    def latest_checkpoint(self):
        return latest_checkpoint(self.run.output_dir)

    def _best_path(self):
        return fileio.join(self.run.output_dir, "best_trial.json")

    def _load_best(self):
        return fileio.read_json(self._best_path()) if fileio.exists(self._best_path()) else None

    def _history_file(self):
        path = fileio.join(self.run.output_dir, EVAL_HISTORY)
        return fileio.read_json(path) if fileio.exists(path) else []

    def _previous_history(self):
        return [
            h for h in self._history_file() if h["global_step"] < self.history[-1]["global_step"]
        ]

    def evaluated_steps(self):
        """Steps already evaluated, by this run or before a restart."""
        return {h["global_step"] for h in self._history_file()}

    def _is_better(self, value):
        if self.best is None:
            return True
        old = self.best[self.run.best_metric]
        return value > old if self.run.best_mode == "max" else value < old

    def save(self):
        step = self.step()
        path = self.files.save(step)
        self.last_saved_step = step
        logging.info("saved checkpoint %s at step %d", path, step)
        return path

    def save_and_evaluate(self):
        self.save()
        kill_point("saved", self.step())
        self.evaluate()

    def evaluate(self):
        """Evaluate the model at its current step: summaries, eval_results.txt, best export."""
        if self.evaluate_fn is None:
            return
        step = self.step()
        with one_step_per_call(self.model):
            results = {k: _number(v) for k, v in self.evaluate_fn(self.model).items()}
        results["global_step"] = step
        self.history.append(results)
        logging.info("step %d eval: %s", step, format_metrics(results))
        with self.writer.as_default(step=step), tf.summary.record_if(True):
            for k, v in results.items():
                if k != "global_step":
                    tf.summary.scalar(k, v)
        self.writer.flush()
        if not self.chief:
            return
        append_results(self.run.output_dir, results, title=f"eval of ckpt-{step} (step {step})")
        write_text_atomic(
            fileio.join(self.run.output_dir, EVAL_HISTORY),
            json.dumps(self._previous_history() + [results], indent=1),
        )
        metric = self.run.best_metric
        if metric is not None:
            if metric not in results:
                raise ValueError(
                    f"best metric {metric!r} is not among the eval results {sorted(results)}"
                )
            if self._is_better(results[metric]):
                self.best = dict(results)
                export = self.export_best_fn or _export_tf1
                export(self.model, fileio.join(self.run.output_dir, BEST_CHECKPOINT), step)
                write_text_atomic(
                    self._best_path(), json.dumps(self.best, indent=1, sort_keys=True)
                )
                write_text_atomic(
                    fileio.join(self.run.output_dir, "best_trial.txt"), format_results(self.best)
                )
                logging.info(
                    "new best %s %s at step %d: %s",
                    metric,
                    format_value(results[metric]),
                    step,
                    BEST_CHECKPOINT,
                )


def _number(value):
    """A metric as an int (counts) or a float, so every block prints it the same way."""
    value = np.asarray(value).item()
    return value if isinstance(value, (bool, int)) else float(value)


def _export_tf1(model, path, step):
    save_original_checkpoint(model, path, global_step=step)
