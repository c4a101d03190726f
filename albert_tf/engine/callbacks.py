"""The Keras callbacks of the training engine: stop at the step count, stop on a non-finite
loss, log the step rate, and checkpoint + evaluate at each save point."""

from __future__ import annotations

import time

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from albert_tf.core.errors import TrainingError
from albert_tf.engine.fault_injection import kill_point


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
            f"execution of --iterations_per_loop={self.per_execution})"
        )
        raise NonFiniteLossError(
            f"non-finite training loss {_scalar(loss)} at {where}; training stopped, the last good "
            f"checkpoint is {self.e.latest_checkpoint() or 'none (nothing was saved)'}"
        )


class StepRateLogger(keras.callbacks.Callback):
    """Logs steps/s and examples/s every `every` steps, and writes them, the loss and the
    learning rate to TensorBoard (the engine's own writer: at any iterations_per_loop)."""

    def __init__(self, every, global_batch_size, writer, step_fn):
        super().__init__()
        self.every, self.batch, self.writer, self.step_fn = (
            every,
            global_batch_size,
            writer,
            step_fn,
        )
        self._t, self._s = None, None

    def on_train_begin(self, logs=None):
        self._t, self._s = time.time(), self.step_fn()

    def on_train_batch_end(self, batch, logs=None):
        step = self.step_fn()
        if step - self._s >= self.every:
            now = time.time()
            rate = (step - self._s) / max(now - self._t, 1e-9)
            loss = (logs or {}).get("loss")
            loss = None if loss is None else _scalar(loss)
            lr = _scalar(self.model.optimizer.learning_rate)
            logging.info(
                "step %d: %.2f steps/s, %.1f examples/s, loss %s, learning rate %.3g",
                step,
                rate,
                rate * self.batch,
                loss,
                lr,
            )
            with self.writer.as_default(step=step), tf.summary.record_if(True):
                tf.summary.scalar("steps_per_second", rate)
                tf.summary.scalar("examples_per_second", rate * self.batch)
                tf.summary.scalar("learning_rate", lr)
                if loss is not None:
                    tf.summary.scalar("loss", loss)
            self.writer.flush()
            self._t, self._s = now, step


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
