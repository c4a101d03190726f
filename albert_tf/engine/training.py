"""The one training engine: every driver (pretraining, GLUE, SQuAD, RACE) trains through `train`.

Keras `model.fit` over a distributed tf.data pipeline, in "epochs" of save_checkpoints_steps
steps: after each, an object checkpoint (model + optimizer, resumable), an evaluation of that
checkpoint by the task's `evaluate_fn`, eval_results.txt, TensorBoard summaries, and the best
checkpoint by the task's metric exported in Google's TF1 format as model.ckpt-best.
The parts live in `run_config`, `run_lock`, `init_checkpoint`, `compiling`, `callbacks`,
`save_points`, `results` and `kill_points`; their public names are re-exported here.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
from typing import Callable, Optional

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from albert_tf import fileio
from albert_tf.engine import distribute
from albert_tf.engine.callbacks import (
    NonFiniteLossError, _CheckpointAndEvaluate, _StepRateLogger, _StopAtStep,
    _StopOnNonFiniteLoss)
from albert_tf.engine.compiling import compile_for_inference, compile_for_training
from albert_tf.engine.init_checkpoint import init_from_checkpoint
from albert_tf.engine.kill_points import KILL_AT_ENV
from albert_tf.engine.preemption import save_on_sigterm
from albert_tf.engine.results import append_results, format_results
from albert_tf.engine.run_config import RunConfig
from albert_tf.engine.run_lock import LOCK_FILE, OutputDirLockedError, output_dir_lock
from albert_tf.engine.save_points import BEST_CHECKPOINT, EVAL_HISTORY, _Engine, restore_latest

__all__ = [
    "train", "RunConfig", "TrainResult", "weights_fingerprint", "BEST_CHECKPOINT",
    "EVAL_HISTORY", "LOCK_FILE", "KILL_AT_ENV", "NonFiniteLossError", "OutputDirLockedError",
    "append_results", "format_results", "compile_for_training", "compile_for_inference",
    "init_from_checkpoint", "output_dir_lock",
]


@dataclasses.dataclass
class TrainResult:
    model: keras.Model
    global_step: int
    best: Optional[dict]
    eval_history: list
    train_history: dict = dataclasses.field(default_factory=dict)


def _resumed_dataset_fn(train_dataset_fn, consumed_micro_batches: int):
    """The training pipeline without the micro-batches a resumed run's previous life consumed,
    so that with a fixed seed the resumed run sees exactly the batches of an unbroken one. Each
    input pipeline feeds num_replicas_in_sync / num_input_pipelines replicas per micro-batch."""
    if not consumed_micro_batches:
        return train_dataset_fn

    def dataset_fn(batch, ctx):
        per_pipeline = max(1, ctx.num_replicas_in_sync // ctx.num_input_pipelines)
        return train_dataset_fn(batch, ctx).skip(consumed_micro_batches * per_pipeline)
    return dataset_fn


def _seed_states(model):
    """Keras dropout SeedGenerator states: not tracked by tf.train.Checkpoint through the model,
    so checkpointed explicitly (a resumed run draws the same dropout masks as an unbroken one)."""
    return [v for v in model.variables if v.path.endswith("seed_generator_state")]


def train(model_fn: Callable[[], keras.Model], optimizer_fn: Callable[[], keras.optimizers.Optimizer],
          train_dataset_fn: Callable, global_batch_size: int, run: RunConfig, strategy=None, *,
          evaluate_fn: Optional[Callable[[keras.Model], dict]] = None,
          init_checkpoint: Optional[str] = None, init_kwargs: Optional[dict] = None,
          export_best_fn=None) -> TrainResult:
    """Train `model_fn()` (an AlbertTaskModel) to run.num_train_steps optimizer steps.

    `train_dataset_fn(per_replica_batch, input_context)` returns an infinite dataset of feature
    dicts. `global_batch_size` is the batch of one optimizer step; with gradient accumulation
    it is split into gradient_accumulation_steps micro-batches. A run restarted on the same output_dir resumes from its last checkpoint at the same
    step; otherwise `init_checkpoint` (Google TF1 or ours) initialises the weights.
    """
    strategy = strategy or tf.distribute.get_strategy()
    with output_dir_lock(run.output_dir, strategy):
        return _train(model_fn, optimizer_fn, train_dataset_fn, global_batch_size, run, strategy,
                      evaluate_fn, init_checkpoint, init_kwargs, export_best_fn)


def _train(model_fn, optimizer_fn, train_dataset_fn, global_batch_size, run, strategy,
           evaluate_fn, init_checkpoint, init_kwargs, export_best_fn) -> TrainResult:
    chief = distribute.is_chief(strategy)
    write_dir = distribute.writable_dir(run.output_dir, strategy)
    if not chief:
        fileio.makedirs(run.output_dir)
    micro = run.gradient_accumulation_steps
    save_every = min(run.save_checkpoints_steps, run.num_train_steps)
    steps_per_epoch = save_every * micro  # fit counts micro-batches
    if run.seed is not None:
        keras.utils.set_random_seed(run.seed)
    model, checkpoint = _build(model_fn, optimizer_fn, run, strategy, steps_per_epoch)
    latest = restore_latest(checkpoint, run.output_dir)
    if latest:
        logging.info("resumed from %s", latest)
    elif init_checkpoint:
        init_from_checkpoint(model, init_checkpoint, **(init_kwargs or {}))
    engine = _Engine(model, checkpoint, run, evaluate_fn, export_best_fn, chief, write_dir)
    start = engine.step()
    epochs = math.ceil(run.num_train_steps / save_every)
    initial_epoch = start // save_every
    at_save_point = start % save_every == 0 or start >= run.num_train_steps
    if latest and at_save_point and evaluate_fn is not None and start not in engine.evaluated_steps():
        engine.evaluate()  # the previous run was stopped between this checkpoint and its eval
    if start >= run.num_train_steps:
        logging.info("already trained to step %d >= num_train_steps %d", start, run.num_train_steps)
        return TrainResult(model, start, engine.best, engine.history)
    if global_batch_size % micro:
        raise ValueError(f"train batch size {global_batch_size} is not divisible by "
                         f"--gradient_accumulation_steps {micro}")
    # One optimizer step consumes `micro` micro-batches that together make the global batch.
    dataset_at = lambda step: distribute.distribute_dataset(  # noqa: E731
        strategy, _resumed_dataset_fn(train_dataset_fn, step * micro), global_batch_size // micro)
    with save_on_sigterm(engine) as on_sigterm:
        callbacks = [
            _StopOnNonFiniteLoss(engine, model.steps_per_execution),
            _StopAtStep(run.num_train_steps, engine.step),
            _StepRateLogger(run.log_every_steps, global_batch_size,
                            tf.summary.create_file_writer(fileio.join(write_dir, "train")), engine.step),
            _CheckpointAndEvaluate(engine), on_sigterm,
        ]
        verbose = run.verbose if chief else 0
        if not at_save_point:  # preempted between save points: steps up to the next one first
            initial_epoch += 1
            with _one_step_per_call(model):
                model.fit(dataset_at(start), epochs=1,
                          steps_per_epoch=(initial_epoch * save_every - start) * micro,
                          callbacks=callbacks, verbose=verbose)
        history = model.fit(dataset_at(engine.step()), epochs=epochs, steps_per_epoch=steps_per_epoch,
                            initial_epoch=initial_epoch, callbacks=callbacks, verbose=verbose) \
            if engine.step() < run.num_train_steps else keras.callbacks.History()
    logging.info("trained to step %d; weights sha256 %s", engine.step(), weights_fingerprint(model))
    if not chief:  # a non-chief's checkpoints and summaries are only for the collectives
        fileio.rmtree(write_dir)
    return TrainResult(model, engine.step(), engine.best, engine.history,
                       getattr(history, "history", {}))


def _build(model_fn, optimizer_fn, run, strategy, steps_per_epoch):
    """The model, compiled for training under the strategy, and the checkpoint of its state."""
    with strategy.scope():
        model = model_fn()
        optimizer = optimizer_fn()
        optimizer.build(model.trainable_variables)
        compile_for_training(model, optimizer, run, strategy, steps_per_epoch)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer,
                                         seed_states=_seed_states(model))
    return model, checkpoint


@contextlib.contextmanager
def _one_step_per_call(model):
    """Within: the training function runs one step per call, so a catch-up epoch of any length
    fits (the compiled function of --iterations_per_loop steps comes back afterwards)."""
    from albert_tf.engine.compiling import _step_function
    saved = model.steps_per_execution, model.train_function
    if saved[0] > 1:
        model.steps_per_execution = 1
        model.train_function = _step_function(model, model.train_step, 1)
    try:
        yield
    finally:
        model.steps_per_execution, model.train_function = saved


def weights_fingerprint(model) -> str:
    """SHA-256 of all weights, to check that workers or runs agree bit for bit."""
    digest = hashlib.sha256()
    for w in model.weights:
        digest.update(np.asarray(w).tobytes())
    return digest.hexdigest()
