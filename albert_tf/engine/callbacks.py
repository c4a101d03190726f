"""The Keras callbacks of the training engine: stop at the step count, stop on a non-finite
loss, show the run's progress (and write its training scalars), and checkpoint + evaluate at
each save point."""

from __future__ import annotations

import time

import keras
import numpy as np
import tensorflow as tf

from albert_tf.core.errors import TrainingError
from albert_tf.engine.fault_injection import kill_point
from albert_tf.engine.progress import ProgressBar


class NonFiniteLossError(TrainingError):
    """The training loss became NaN or Inf; no checkpoint was written after it."""


class StopAtStep(keras.callbacks.Callback):
    """Stop exactly at num_train_steps optimizer steps, whatever the epoch arithmetic."""

    def __init__(self, num_steps, step_fn):
        super().__init__()
        self.num_steps = num_steps
        self.step_fn = step_fn

    def on_train_batch_end(self, batch, logs=None):
        step = self.step_fn()
        kill_point("step", step)
        if step >= self.num_steps:
            self.model.stop_training = True


def _scalar(value) -> float:
    return float(np.asarray(keras.ops.convert_to_numpy(value)))


class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """After every execution: a NaN/Inf loss stops training with NonFiniteLossError naming the
    step, before anything is saved (the epoch's running mean turns non-finite with the first
    bad step, so the first execution that contains it is caught)."""

    def __init__(self, engine, steps_per_execution):
        super().__init__()
        self.e, self.per_execution = engine, steps_per_execution

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None or np.isfinite(_scalar(loss)):
            return
        self.e.failed = True
        step = self.e.step()
        where = (
            f"step {step}"
            if self.per_execution == 1
            else f"step {step} (within steps {step - self.per_execution + 1}..{step}, one "
            f"execution of iterations_per_loop={self.per_execution})"
        )
        raise NonFiniteLossError(
            f"non-finite training loss {_scalar(loss)} at {where}; training stopped, the last good "
            f"checkpoint is {self.e.latest_checkpoint() or 'none (nothing was saved)'}"
        )


class TrainingProgress(keras.callbacks.Callback):
    """The run's progress bar (step / total, ETA, loss, learning rate, steps/s) and its training
    scalars in TensorBoard: every `every` steps, at each save point and at the end, so a run
    shorter than `every` steps still writes them.

    Args:
        total_steps: The step the run ends at.
        global_batch_size: Examples per optimizer step (for examples/s).
        writer: The tf.summary writer of the run's `train/` folder.
        step_fn: Returns the current optimizer step.
        every: Steps between TensorBoard points (and between lines when stderr is no terminal).
        show: Show the progress (False on non-chief workers).
    """

    def __init__(self, total_steps, global_batch_size, writer, step_fn, *, every=100, show=True):
        super().__init__()
        self.total, self.batch, self.writer, self.step_fn = (
            total_steps,
            global_batch_size,
            writer,
            step_fn,
        )
        self.every, self.show = max(1, int(every)), show
        self.bar = None
        self._last_scalars, self._logs = None, {}
        self._rate_mark = None

    def on_train_begin(self, logs=None):
        if self.bar is None:  # the engine may call fit twice (a catch-up epoch, then the rest)
            step = self.step_fn()
            self.bar = ProgressBar(self.total, step, every=self.every)
            if self.show:
                self.bar.open()
            self._last_scalars, self._rate_mark = step, (time.time(), step)

    def _fields(self):
        loss = self._logs.get("loss")
        return {
            "loss": None if loss is None else _scalar(loss),
            "learning_rate": _scalar(self.model.optimizer.learning_rate),
        }

    def on_train_batch_end(self, batch, logs=None):
        self._logs = logs or {}
        step = self.step_fn()
        if self.show:
            self.bar.update(step, **self._fields())
        if step - self._last_scalars >= self.every:
            self.write_scalars(step)

    def on_epoch_end(self, epoch, logs=None):
        self.write_scalars(self.step_fn())

    def write_scalars(self, step):
        """Writes loss, learning rate, steps/s and examples/s at `step` (once per step)."""
        if step == self._last_scalars or not self._logs:
            return
        then, then_step = self._rate_mark
        now = time.time()
        rate = (step - then_step) / max(now - then, 1e-9)
        fields = self._fields()
        with self.writer.as_default(step=step), tf.summary.record_if(True):
            tf.summary.scalar("steps_per_second", rate)
            tf.summary.scalar("examples_per_second", rate * self.batch)
            tf.summary.scalar("learning_rate", fields["learning_rate"])
            if fields["loss"] is not None:
                tf.summary.scalar("loss", fields["loss"])
        self.writer.flush()
        self._last_scalars, self._rate_mark = step, (now, step)

    def close(self):
        """Writes the last scalars and leaves the final progress on screen."""
        if self.bar is not None:
            self.write_scalars(self.step_fn())
            if self.show:
                self.bar.close()


class CheckpointAndEvaluate(keras.callbacks.Callback):
    """At each save point: object checkpoint, evaluation, results files, best TF1 export."""

    def __init__(self, engine):
        super().__init__()
        self.e = engine

    def on_epoch_end(self, epoch, logs=None):
        self.e.save_and_evaluate()

    def on_train_end(self, logs=None):
        if not self.e.failed and self.e.step() != self.e.last_saved_step:
            self.e.save_and_evaluate()
