"""The one training engine: every driver (pretraining, GLUE, SQuAD, RACE) trains through `train`.

Keras `model.fit` over a distributed tf.data pipeline, in "epochs" of save_checkpoints_steps
steps: after each, an object checkpoint (model + optimizer, resumable), an evaluation of that
checkpoint by the task's `evaluate_fn`, eval_results.txt, TensorBoard summaries, and the best
checkpoint by the task's metric exported in Google's TF1 format as model.ckpt-best.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import time
from typing import Callable, Optional

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from albert_tf import distribute
from albert_tf.fileio import write_text_atomic

BEST_CHECKPOINT = "model.ckpt-best"
EVAL_HISTORY = "eval_history.json"  # every evaluation so far, across restarts


@dataclasses.dataclass
class RunConfig:
    """How long to train and when to save/evaluate (Google's flag names)."""
    output_dir: str
    num_train_steps: int
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    iterations_per_loop: int = 1
    jit_compile: Optional[bool] = None
    best_metric: Optional[str] = None
    best_mode: str = "max"
    log_every_steps: int = 100
    gradient_accumulation_steps: int = 1
    verbose: object = "auto"

    def __post_init__(self):
        for name in ("num_train_steps", "save_checkpoints_steps", "iterations_per_loop",
                     "gradient_accumulation_steps", "log_every_steps"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"--{name} must be >= 1, got {getattr(self, name)}")
        if self.keep_checkpoint_max < 1:
            raise ValueError(f"--keep_checkpoint_max must be >= 1, got {self.keep_checkpoint_max}")
        if self.best_mode not in ("max", "min"):
            raise ValueError(f"best_mode must be 'max' or 'min', got {self.best_mode!r}")


@dataclasses.dataclass
class TrainResult:
    model: keras.Model
    global_step: int
    best: Optional[dict]
    eval_history: list
    train_history: dict = dataclasses.field(default_factory=dict)


def format_results(results: dict) -> str:
    """Google's eval_results.txt layout: one `key = value` line per metric, sorted."""
    return "".join(f"{k} = {results[k]}\n" for k in sorted(results))


def init_from_checkpoint(model, path, **kwargs):
    """Initialise from a Google TF1 checkpoint (names `bert/...`) or one of our object
    checkpoints (restored by attribute path, e.g. the `.albert` encoder of any task model).

    The load report (loaded / missing / unused) is always logged; a path that is not a
    checkpoint, or one that lacks encoder variables the model needs, raises InputError."""
    from albert_tf.checkpoints import load_original_checkpoint, resolve_checkpoint_path
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


class _StopAtStep(keras.callbacks.Callback):
    """Stop exactly at num_train_steps optimizer steps, whatever the epoch arithmetic."""

    def __init__(self, num_steps, step_fn):
        super().__init__()
        self.num_steps = num_steps
        self.step_fn = step_fn

    def on_train_batch_end(self, batch, logs=None):
        if self.step_fn() >= self.num_steps:
            self.model.stop_training = True


class _StepRateLogger(keras.callbacks.Callback):
    """Logs steps/s and examples/s every `every` steps, and writes them to TensorBoard."""

    def __init__(self, every, global_batch_size, writer, step_fn):
        super().__init__()
        self.every, self.batch, self.writer, self.step_fn = every, global_batch_size, writer, step_fn
        self._t, self._s = None, None

    def on_train_begin(self, logs=None):
        self._t, self._s = time.time(), self.step_fn()

    def on_train_batch_end(self, batch, logs=None):
        step = self.step_fn()
        if step - self._s >= self.every:
            now = time.time()
            rate = (step - self._s) / max(now - self._t, 1e-9)
            loss = (logs or {}).get("loss")
            logging.info("step %d: %.2f steps/s, %.1f examples/s, loss %s", step, rate,
                         rate * self.batch, loss)
            if self.writer is not None:
                with self.writer.as_default(step=step):
                    tf.summary.scalar("steps_per_second", rate)
                    tf.summary.scalar("examples_per_second", rate * self.batch)
                    if loss is not None:
                        tf.summary.scalar("loss", float(loss))
            self._t, self._s = now, step


class _CheckpointAndEvaluate(keras.callbacks.Callback):
    """At each save point: object checkpoint, evaluation, results files, best TF1 export."""

    def __init__(self, engine):
        super().__init__()
        self.e = engine

    def on_epoch_end(self, epoch, logs=None):
        self.e.save_and_evaluate()

    def on_train_end(self, logs=None):
        if self.e.step() != self.e.last_saved_step:
            self.e.save_and_evaluate()


class _Engine:
    """State shared by the callbacks of one `train` call."""

    def __init__(self, model, checkpoint, run, evaluate_fn, export_best_fn, chief, write_dir):
        self.model, self.run, self.evaluate_fn = model, run, evaluate_fn
        self.export_best_fn = export_best_fn
        self.chief, self.write_dir = chief, write_dir
        self.manager = tf.train.CheckpointManager(
            checkpoint, write_dir, max_to_keep=run.keep_checkpoint_max, checkpoint_name="ckpt")
        self.writer = tf.summary.create_file_writer(os.path.join(write_dir, "eval"))
        self.history = []
        self.best = self._load_best()
        self.last_saved_step = self.step()

    def step(self):
        """Optimizer updates so far (with gradient accumulation, one per N micro-batches)."""
        return int(self.model.optimizer.iterations.numpy())

    def _best_path(self):
        return os.path.join(self.run.output_dir, "best_trial.json")

    def _load_best(self):
        if os.path.exists(self._best_path()):
            with open(self._best_path(), encoding="utf-8") as f:
                return json.load(f)
        return None

    def _previous_history(self):
        path = os.path.join(self.run.output_dir, EVAL_HISTORY)
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as f:
            return [h for h in json.load(f) if h["global_step"] < self.history[-1]["global_step"]]

    def _is_better(self, value):
        if self.best is None:
            return True
        old = self.best[self.run.best_metric]
        return value > old if self.run.best_mode == "max" else value < old

    def save_and_evaluate(self):
        step = self.step()
        self.manager.save(checkpoint_number=step)
        self.last_saved_step = step
        logging.info("saved checkpoint %s at step %d", self.manager.latest_checkpoint, step)
        if self.evaluate_fn is None:
            return
        results = {k: float(v) for k, v in self.evaluate_fn(self.model).items()}
        results["global_step"] = step
        self.history.append(results)
        logging.info("eval at step %d: %s", step, results)
        with self.writer.as_default(step=step):
            for k, v in results.items():
                if k != "global_step":
                    tf.summary.scalar(k, v)
        self.writer.flush()
        if not self.chief:
            return
        with open(os.path.join(self.run.output_dir, "eval_results.txt"), "a", encoding="utf-8") as f:
            f.write(format_results(results) + "\n")
        write_text_atomic(os.path.join(self.run.output_dir, EVAL_HISTORY),
                          json.dumps(self._previous_history() + [results], indent=1))
        metric = self.run.best_metric
        if metric is not None:
            if metric not in results:
                raise ValueError(f"best metric {metric!r} is not among the eval results {sorted(results)}")
            if self._is_better(results[metric]):
                self.best = dict(results)
                export = self.export_best_fn or _export_tf1
                export(self.model, os.path.join(self.run.output_dir, BEST_CHECKPOINT), step)
                write_text_atomic(self._best_path(), json.dumps(self.best, indent=1, sort_keys=True))
                write_text_atomic(os.path.join(self.run.output_dir, "best_trial.txt"),
                                   format_results(self.best))
                logging.info("new best %s = %s at step %d", metric, results[metric], step)


def _export_tf1(model, path, step):
    from albert_tf.checkpoints import save_original_checkpoint
    save_original_checkpoint(model, path, global_step=step)


def compile_for_training(model, optimizer, run: RunConfig, strategy, steps_per_epoch=None):
    """compile with XLA (default on for TPU), steps_per_execution = iterations_per_loop (made to
    divide the steps between checkpoints), and dynamic loss scaling under mixed_float16."""
    if keras.mixed_precision.global_policy().name == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    per_execution = run.iterations_per_loop
    if steps_per_epoch:
        per_execution = math.gcd(per_execution, steps_per_epoch)
    model.compile(optimizer=optimizer, jit_compile=distribute.jit_compile_default(strategy, run.jit_compile),
                  steps_per_execution=per_execution)
    return model


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
    chief = distribute.is_chief(strategy)
    write_dir = distribute.writable_dir(run.output_dir, strategy)
    if not chief:
        os.makedirs(run.output_dir, exist_ok=True)
    micro = run.gradient_accumulation_steps
    save_every = min(run.save_checkpoints_steps, run.num_train_steps)
    steps_per_epoch = save_every * micro  # fit counts micro-batches
    with strategy.scope():
        model = model_fn()
        optimizer = optimizer_fn()
        optimizer.build(model.trainable_variables)
        compile_for_training(model, optimizer, run, strategy, steps_per_epoch)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    latest = tf.train.latest_checkpoint(run.output_dir)
    if latest:
        checkpoint.restore(latest).assert_existing_objects_matched()
        logging.info("resumed from %s", latest)
    elif init_checkpoint:
        init_from_checkpoint(model, init_checkpoint, **(init_kwargs or {}))
    engine = _Engine(model, checkpoint, run, evaluate_fn, export_best_fn, chief, write_dir)
    start = engine.step()
    epochs = math.ceil(run.num_train_steps / save_every)
    initial_epoch = start // save_every
    if start >= run.num_train_steps:
        logging.info("already trained to step %d >= num_train_steps %d", start, run.num_train_steps)
        return TrainResult(model, start, engine.best, engine.history)
    if global_batch_size % micro:
        raise ValueError(f"train batch size {global_batch_size} is not divisible by "
                         f"--gradient_accumulation_steps {micro}")
    # One optimizer step consumes `micro` micro-batches that together make the global batch.
    dataset = distribute.distribute_dataset(strategy, train_dataset_fn, global_batch_size // micro)
    tb_dir = os.path.join(write_dir, "train")
    callbacks = [
        _StopAtStep(run.num_train_steps, engine.step),
        _StepRateLogger(run.log_every_steps, global_batch_size,
                        tf.summary.create_file_writer(tb_dir), engine.step),
        keras.callbacks.TensorBoard(log_dir=write_dir, update_freq=run.log_every_steps,
                                    write_graph=False),
        _CheckpointAndEvaluate(engine),
    ]
    history = model.fit(dataset, epochs=epochs, steps_per_epoch=steps_per_epoch,
                        initial_epoch=initial_epoch, callbacks=callbacks,
                        verbose=run.verbose if chief else 0)
    logging.info("trained to step %d; weights sha256 %s", engine.step(), weights_fingerprint(model))
    if not chief:  # a non-chief's checkpoints and summaries are only for the collectives
        shutil.rmtree(write_dir, ignore_errors=True)
    return TrainResult(model, engine.step(), engine.best, engine.history, history.history)


def weights_fingerprint(model) -> str:
    """SHA-256 of all weights, to check that workers or runs agree bit for bit."""
    digest = hashlib.sha256()
    for w in model.weights:
        digest.update(np.asarray(w).tobytes())
    return digest.hexdigest()
