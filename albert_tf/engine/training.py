"""The one training engine: every driver (pretraining, GLUE, SQuAD, RACE) trains through `train`.

Keras `model.fit` over a distributed tf.data pipeline, in "epochs" of save_checkpoints_steps
steps: after each, an object checkpoint (model + optimizer, resumable), an evaluation of that
checkpoint by the task's `evaluate_fn`, eval_results.txt, TensorBoard summaries, and the best
checkpoint by the task's metric exported in Google's TF1 format as model.ckpt-best.
The parts live in `run_config`, `run_lock`, `init_checkpoint`, `compiling`, `callbacks`,
`save_points`, `results` and `fault_injection` (test-only).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from typing import Callable, Optional

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.config import CONFIG_FILE
from albert_tf.engine import distribute
from albert_tf.engine.callbacks import (
    CheckpointAndEvaluate,
    StopAtStep,
    StopOnNonFiniteLoss,
    TrainingProgress,
)
from albert_tf.engine.compiling import compile_for_training, single_step_training
from albert_tf.engine.init_checkpoint import init_from_checkpoint
from albert_tf.engine.preemption import save_on_sigterm
from albert_tf.engine.run_config import RunConfig
from albert_tf.engine.run_lock import output_dir_lock
from albert_tf.engine.save_points import SavePoints, restore_latest
from albert_tf.engine.variable_checkpoint import VariableCheckpoint, uses_variable_checkpoints


@dataclasses.dataclass
class TrainResult:
    """What `train` returns.

    Args:
        model: keras.Model. The trained model.
        global_step: int. The optimizer updates applied, over all of the run's lives.
        best: dict or None. The best evaluation by the run's metric (None without evaluation).
        eval_history: list of dict. Every evaluation of the run, in order.
        train_history: dict. Keras `fit`'s history of this life of the run (metric name to
            one value per epoch of `save_checkpoints_steps` steps); empty when nothing was
            left to train.
    """

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


def train(
    model_fn: Callable[[], keras.Model],
    optimizer_fn: Callable[[], keras.optimizers.Optimizer],
    train_dataset_fn: Callable,
    *,
    global_batch_size: int,
    run: RunConfig,
    strategy=None,
    evaluate_fn: Optional[Callable[[keras.Model], dict]] = None,
    init_checkpoint: Optional[str] = None,
    init_kwargs: Optional[dict] = None,
    export_best_fn: Optional[Callable] = None,
) -> TrainResult:
    """Trains `model_fn()` to `run.num_train_steps` optimizer steps, resuming where it stopped.

    Keras `fit` runs in "epochs" of `run.save_checkpoints_steps` steps; after each one the state
    is checkpointed, `evaluate_fn` scores it, and the best checkpoint by the task's metric is
    exported as `model.ckpt-best`. A run restarted on the same output_dir resumes from its last
    checkpoint at the same step (same batches, same dropout masks); a fresh run is initialised
    from `init_checkpoint` when one is given.

    Args:
        model_fn: Builds the model to train (an `AlbertTaskModel`, which carries its own loss),
            called under `strategy.scope()`.
        optimizer_fn: Builds the optimizer, e.g. `lambda: create_optimizer(...)`.
        train_dataset_fn: `(per_replica_batch_size, tf.distribute.InputContext) -> dataset`, an
            infinite `tf.data.Dataset` of feature dicts.
        global_batch_size: The examples of one optimizer step over all replicas; with
            `run.gradient_accumulation_steps` > 1 it is split into that many micro-batches.
        run: How long to train and when to save, evaluate and log (`RunConfig`).
        strategy: The `tf.distribute.Strategy`; default: the current one.
        evaluate_fn: `model -> dict of metrics`, called at each save point; None: no evaluation.
        init_checkpoint: A TF1 checkpoint (Google's names) or an albert_tf object checkpoint that
            initialises a fresh run; ignored when the run resumes.
        init_kwargs: Keyword arguments for `init_from_checkpoint` (e.g. `require_encoder=True`).
        export_best_fn: `(model, path, step) -> None`, how the best checkpoint is exported;
            default: a TF1 checkpoint with Google's names.

    Returns:
        A `TrainResult`: the trained model, the global step, the best evaluation, the
        evaluation history and Keras `fit`'s training history.

    Raises:
        OutputDirLockedError: when another live run holds `run.output_dir`.
        NonFiniteLossError: when the loss becomes NaN or infinite.
        ValueError: when `global_batch_size` is not divisible by the gradient accumulation
            steps.

    Example:

    >>> import tempfile
    >>> import tensorflow as tf, albert_tf
    >>> from albert_tf.engine.run_config import RunConfig
    >>> from albert_tf.engine.training import train
    >>> config = albert_tf.AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16,
    ...     num_hidden_layers=2, num_attention_heads=2, intermediate_size=32)
    >>> def dataset_fn(batch_size, context):
    ...     ones, zeros = tf.ones([8, 6], tf.int32), tf.zeros([8, 6], tf.int32)
    ...     features = {"input_ids": ones, "input_mask": ones, "segment_ids": zeros,
    ...                 "label_ids": tf.zeros([8], tf.int32)}
    ...     return tf.data.Dataset.from_tensor_slices(features).repeat().batch(batch_size)
    >>> result = train(lambda: albert_tf.AlbertClassifier(config, num_labels=2),
    ...                lambda: albert_tf.create_optimizer(1e-3, 4, 1), dataset_fn,
    ...                global_batch_size=4,
    ...                run=RunConfig(output_dir=tempfile.mkdtemp(), num_train_steps=4, verbose=0))
    >>> result.global_step
    4
    """
    strategy = strategy or tf.distribute.get_strategy()
    with output_dir_lock(run.output_dir, strategy):
        chief = distribute.is_chief(strategy)
        model, save_points = _start(
            model_fn,
            optimizer_fn,
            run,
            strategy,
            evaluate_fn=evaluate_fn,
            export_best_fn=export_best_fn,
            init_checkpoint=init_checkpoint,
            init_kwargs=init_kwargs,
        )
        start = save_points.step()
        if start >= run.num_train_steps:
            logging.info(
                "already trained to step %d >= num_train_steps %d", start, run.num_train_steps
            )
            return TrainResult(model, start, save_points.best, save_points.history)
        if global_batch_size % run.gradient_accumulation_steps:
            raise ValueError(
                f"train batch size {global_batch_size} is not divisible by "
                f"gradient_accumulation_steps {run.gradient_accumulation_steps}"
            )
        verbose = run.verbose if chief else 0
        history = _fit(
            model, save_points, train_dataset_fn, global_batch_size, run, strategy, verbose
        )
        logging.info(
            "trained to step %d; weights sha256 %s", save_points.step(), weights_fingerprint(model)
        )
        if not chief:  # a non-chief's checkpoints and summaries are only for the collectives
            fileio.rmtree(save_points.write_dir)
        return TrainResult(
            model,
            save_points.step(),
            save_points.best,
            save_points.history,
            getattr(history, "history", {}),
        )


def _start(
    model_fn,
    optimizer_fn,
    run,
    strategy,
    *,
    evaluate_fn,
    export_best_fn,
    init_checkpoint,
    init_kwargs,
):
    """The compiled model, resumed from output_dir or initialised from init_checkpoint, and its
    save points; a resumed run whose last checkpoint was never evaluated is evaluated first."""
    chief = distribute.is_chief(strategy)
    write_dir = distribute.writable_dir(run.output_dir, strategy)
    if not chief:
        fileio.makedirs(run.output_dir)
    if run.seed is not None:
        keras.utils.set_random_seed(run.seed)
    model, checkpoint = _build(model_fn, optimizer_fn, run, strategy)
    resumed = _restore_or_initialize(
        model, checkpoint, run.output_dir, init_checkpoint, init_kwargs
    )
    save_points = SavePoints(model, checkpoint, run, evaluate_fn, export_best_fn, chief, write_dir)
    if chief:
        _record_config(model, run.output_dir)
    start = save_points.step()
    if (
        resumed
        and _at_save_point(start, run)
        and evaluate_fn is not None
        and start not in save_points.evaluated_steps()
    ):
        # the previous run was stopped between this checkpoint and its evaluation
        save_points.evaluate()
    return model, save_points


def _record_config(model, output_dir):
    """albert_config.json in the output folder, the config its checkpoints are written with
    (a later run with another config is refused before any work: validation.check_run_config);
    Google's name, so the folder also reads as a release."""
    config = getattr(model, "config", None)
    path = fileio.join(output_dir, CONFIG_FILE)
    if config is not None and hasattr(config, "to_dict") and not fileio.exists(path):
        fileio.write_text(path, json.dumps(config.to_dict(), indent=2) + "\n")


def _save_every(run) -> int:
    return min(run.save_checkpoints_steps, run.num_train_steps)


def _at_save_point(step, run) -> bool:
    return step % _save_every(run) == 0 or step >= run.num_train_steps


def _restore_or_initialize(model, checkpoint, output_dir, init_checkpoint, init_kwargs) -> bool:
    """Restores the latest checkpoint of output_dir, else initialises from `init_checkpoint`;
    True when the run resumed."""
    latest = restore_latest(checkpoint, output_dir)
    if latest:
        logging.info("resumed from %s", latest)
    elif init_checkpoint:
        init_from_checkpoint(model, init_checkpoint, **(init_kwargs or {}))
    return bool(latest)


def _fit(model, save_points, train_dataset_fn, global_batch_size, run, strategy, verbose):
    """Keras fit from the current step to run.num_train_steps, one epoch per save point (a run
    preempted between save points first steps up to the next one); returns fit's History."""
    micro = run.gradient_accumulation_steps
    save_every = _save_every(run)
    start = save_points.step()
    initial_epoch = start // save_every

    def dataset_at(step):  # one optimizer step consumes `micro` micro-batches of the global batch
        return distribute.distribute_dataset(
            strategy,
            _resumed_dataset_fn(train_dataset_fn, step * micro),
            global_batch_size // micro,
        )

    writer = tf.summary.create_file_writer(fileio.join(save_points.write_dir, "train"))
    shown = TrainingProgress(
        run.num_train_steps,
        global_batch_size,
        writer,
        save_points.step,
        every=run.log_every_steps,
        show=verbose != 0,
    )
    with save_on_sigterm(save_points) as on_sigterm:
        callbacks = [
            StopOnNonFiniteLoss(save_points, model.steps_per_execution),
            StopAtStep(run.num_train_steps, save_points.step),
            shown,
            CheckpointAndEvaluate(save_points),
            on_sigterm,
        ]
        try:
            return _fit_epochs(model, dataset_at, callbacks, save_points, run, initial_epoch)
        finally:
            shown.close()


def _fit_epochs(model, dataset_at, callbacks, save_points, run, initial_epoch):
    """The Keras fit calls: a catch-up epoch when preempted between save points, then one epoch
    per save point; Keras' own progress bar stays off (TrainingProgress shows the whole run)."""
    micro, save_every = run.gradient_accumulation_steps, _save_every(run)
    start = save_points.step()
    if not _at_save_point(start, run):  # preempted between save points
        initial_epoch += 1
        with single_step_training(model):
            model.fit(
                dataset_at(start),
                epochs=1,
                steps_per_epoch=(initial_epoch * save_every - start) * micro,
                callbacks=callbacks,
                verbose=0,
                shuffle=False,  # the dataset shuffles; fit's default True only warns
            )
    if save_points.step() >= run.num_train_steps:
        return keras.callbacks.History()
    return model.fit(
        dataset_at(save_points.step()),
        epochs=math.ceil(run.num_train_steps / save_every),
        steps_per_epoch=save_every * micro,  # fit counts micro-batches
        initial_epoch=initial_epoch,
        callbacks=callbacks,
        verbose=0,
        shuffle=False,
    )


def _build(model_fn, optimizer_fn, run, strategy):
    """The model, compiled for training under the strategy, and the checkpoint of its state."""
    with strategy.scope():
        model = model_fn()
        optimizer = optimizer_fn()
        optimizer.build(model.trainable_variables)
        compile_for_training(
            model, optimizer, run, strategy, _save_every(run) * run.gradient_accumulation_steps
        )
        if uses_variable_checkpoints():  # a Keras variable on JAX is no TF trackable
            checkpoint = VariableCheckpoint(model)
        else:
            checkpoint = tf.train.Checkpoint(
                model=model, optimizer=model.optimizer, seed_states=_seed_states(model)
            )
    return model, checkpoint


def weights_fingerprint(model) -> str:
    """SHA-256 of all weights, to check that workers or runs agree bit for bit."""
    digest = hashlib.sha256()
    for w in model.weights:
        digest.update(np.asarray(w).tobytes())
    return digest.hexdigest()
