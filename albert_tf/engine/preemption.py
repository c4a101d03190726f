"""Preemption: a TPU or spot VM being preempted gets SIGTERM and some seconds of grace. The run
finishes its current step, writes a checkpoint at it, and exits with PreemptedError's code
(75) and one line saying how to resume; the same command then continues exactly as after a
kill at a save point.

Why not tf.distribute.experimental.PreemptionCheckpointHandler: it drives a custom training
loop (`handler.run(step_fn)`), saves through its own CheckpointManager (its own names and state,
not the engine's ckpt-<step> files, eval history and best export), agrees on the step across
workers through the coordination service (absent on one host and under MirroredStrategy), and
exits the process itself. The engine runs Keras `fit`; a SIGTERM flag read by a callback at
every step end gives the same guarantee on every strategy, with the engine's own save.
"""

from __future__ import annotations

import contextlib
import signal
import threading

from absl import logging
import keras

from albert_tf.core.errors import PreemptedError


class _SaveOnSigterm(keras.callbacks.Callback):
    """After each step (each execution of --iterations_per_loop steps): if SIGTERM came, save a
    checkpoint at this step and stop with PreemptedError."""

    def __init__(self, engine):
        super().__init__()
        self.e = engine
        self.signalled = False

    def on_train_batch_end(self, batch, logs=None):
        if not self.signalled:
            return
        self.e.failed = True  # no save at train end: this one is the last
        step = self.e.step()
        path = self.e.save()
        raise PreemptedError(
            f"preempted (SIGTERM) at step {step}: saved {path}; run the same "
            "command again to resume from it"
        )


@contextlib.contextmanager
def save_on_sigterm(engine):
    """Within: SIGTERM sets a flag that the yielded callback turns into a save and a stop. The
    previous handler comes back afterwards. Off the main thread (signals cannot be caught
    there) the callback never fires."""
    callback = _SaveOnSigterm(engine)
    if threading.current_thread() is not threading.main_thread():
        yield callback
        return

    def on_sigterm(signum, frame):
        logging.warning("SIGTERM: saving a checkpoint after the current step, then stopping")
        callback.signalled = True

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield callback
    finally:
        signal.signal(signal.SIGTERM, previous)
