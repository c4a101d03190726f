"""The one training engine: every driver (pretraining, GLUE, SQuAD, RACE) trains through `train`.

Keras `model.fit` over a distributed tf.data pipeline, in "epochs" of save_checkpoints_steps
steps: after each, an object checkpoint (model + optimizer, resumable), an evaluation of that
checkpoint by the task's `evaluate_fn`, eval_results.txt, TensorBoard summaries, and the best
checkpoint by the task's metric exported in Google's TF1 format as model.ckpt-best.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
import signal
import socket
import time
from typing import Callable, Optional

from absl import logging
import keras
import numpy as np
import tensorflow as tf

from albert_tf.engine import distribute
from albert_tf.errors import TrainingError
from albert_tf.fileio import write_text_atomic

BEST_CHECKPOINT = "model.ckpt-best"
EVAL_HISTORY = "eval_history.json"  # every evaluation so far, across restarts
LOCK_FILE = "albert_tf.lock"  # {"pid", "host"} of the run that holds output_dir
KILL_AT_ENV = "ALBERT_TF_TEST_KILL_AT"  # "point:step": SIGKILL there (preemption tests only)


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
    seed: Optional[int] = None  # seeds Keras (weights, dropout) so a run can be repeated exactly

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


def append_results(output_dir: str, results: dict):
    """Add one block to output_dir/eval_results.txt, atomically (a kill never leaves half a block)."""
    path = os.path.join(output_dir, "eval_results.txt")
    old = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = f.read()
    write_text_atomic(path, old + format_results(results) + "\n")


class NonFiniteLossError(TrainingError):
    """The training loss became NaN or Inf; no checkpoint was written after it."""


class OutputDirLockedError(TrainingError):
    """Another live run holds output_dir's lock file."""


def _kill_point(point: str, step: int):
    """Preemption tests: SIGKILL this process when $ALBERT_TF_TEST_KILL_AT is `point:step`."""
    if os.environ.get(KILL_AT_ENV) == f"{point}:{step}":
        logging.warning("%s=%s: killing pid %d", KILL_AT_ENV, os.environ[KILL_AT_ENV], os.getpid())
        logging.flush()
        os.kill(os.getpid(), signal.SIGKILL)


# ---- one run per output_dir --------------------------------------------------------------------
_HELD_LOCKS: dict = {}  # realpath of a lock file this process holds -> nesting depth


def _read_lock(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (zombies count as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _holder_alive(holder) -> bool:
    if not holder or not isinstance(holder.get("pid"), int):
        return False  # unreadable lock: its writer died before finishing it
    if holder.get("host") != socket.gethostname():
        return True  # cannot check another host's processes: assume it still runs
    return holder["pid"] != os.getpid() and _pid_alive(holder["pid"])


def _create_lock(path) -> bool:
    """Create the lock file with its content in one step (link fails if it exists)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"pid": os.getpid(), "host": socket.gethostname()}, f)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.remove(tmp)


def _acquire_lock(output_dir):
    path = os.path.join(output_dir, LOCK_FILE)
    while not _create_lock(path):
        holder = _read_lock(path)
        if _holder_alive(holder):
            raise OutputDirLockedError(
                f"--output_dir {output_dir} is in use by pid {holder['pid']} on {holder.get('host')} "
                f"(lock file {path}); wait for that run to end, or delete the lock file if it is gone")
        logging.warning("taking over the stale lock %s of pid %s, which no longer runs", path,
                        (holder or {}).get("pid"))
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
    return path


def _release_lock(path):
    holder = _read_lock(path)
    if holder and holder.get("pid") == os.getpid():
        os.remove(path)


@contextlib.contextmanager
def output_dir_lock(output_dir: str, strategy=None):
    """Hold output_dir/albert_tf.lock (pid and host) for the block; a second run on the same
    output_dir fails with one line naming the holder. Re-entrant; only the chief locks."""
    if not distribute.is_chief(strategy):
        yield
        return
    os.makedirs(output_dir, exist_ok=True)
    key = os.path.realpath(os.path.join(output_dir, LOCK_FILE))
    if key not in _HELD_LOCKS:
        _acquire_lock(output_dir)
    _HELD_LOCKS[key] = _HELD_LOCKS.get(key, 0) + 1
    try:
        yield
    finally:
        _HELD_LOCKS[key] -= 1
        if not _HELD_LOCKS[key]:
            del _HELD_LOCKS[key]
            _release_lock(key)


def init_from_checkpoint(model, path, **kwargs):
    """Initialise from a Google TF1 checkpoint (names `bert/...`) or one of our object
    checkpoints (restored by attribute path, e.g. the `.albert` encoder of any task model).

    The load report (loaded / missing / unused) is always logged; a path that is not a
    checkpoint, or one that lacks encoder variables the model needs, raises InputError."""
    from albert_tf.formats.tf1 import load_original_checkpoint, resolve_checkpoint_path
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
    """Restore an object checkpoint, after checking it holds every encoder variable.

    The check follows the checkpoint's object graph (model → albert → ...), not the variable
    names: a variable is stored once, under the first path that reaches it (often the
    optimizer's `_trainable_variables/N`), so names alone do not show what a checkpoint holds."""
    from albert_tf.errors import InputError
    encoder = getattr(model, "albert", model)
    root = (tf.train.Checkpoint(model=tf.train.Checkpoint(albert=encoder)) if encoder is not model
            else tf.train.Checkpoint(model=model))
    try:
        root.restore(path).assert_existing_objects_matched()
    except AssertionError as e:
        needed = len(encoder.weights)
        count = re.search(r"Found (\d+) Python objects", str(e))
        first = re.search(r"path=([^,]+)", str(e))
        held = max(0, needed - int(count.group(1))) if count else 0
        raise InputError(f"checkpoint {path} holds {held} of the {needed} encoder variables the "
                         f"model needs (missing e.g. {first.group(1) if first else '?'}); the "
                         "others would stay random") from None
    logging.info("object checkpoint %s: every encoder variable present (%d checkpoint variables)",
                 path, len(names) - 1)
    tf.train.Checkpoint(model=model).restore(path).expect_partial()
    return None


class _StopAtStep(keras.callbacks.Callback):
    """Stop exactly at num_train_steps optimizer steps, whatever the epoch arithmetic."""

    def __init__(self, num_steps, step_fn):
        super().__init__()
        self.num_steps = num_steps
        self.step_fn = step_fn

    def on_train_batch_end(self, batch, logs=None):
        step = self.step_fn()
        _kill_point("step", step)
        if step >= self.num_steps:
            self.model.stop_training = True


def _scalar(value) -> float:
    return float(np.asarray(keras.ops.convert_to_numpy(value)))


class _StopOnNonFiniteLoss(keras.callbacks.Callback):
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
        where = (f"step {step}" if self.per_execution == 1 else
                 f"step {step} (within steps {step - self.per_execution + 1}..{step}, one "
                 f"execution of --iterations_per_loop={self.per_execution})")
        raise NonFiniteLossError(
            f"non-finite training loss {_scalar(loss)} at {where}; training stopped, the last good "
            f"checkpoint is {self.e.latest_checkpoint() or 'none (nothing was saved)'}")


class _StepRateLogger(keras.callbacks.Callback):
    """Logs steps/s and examples/s every `every` steps, and writes them, the loss and the
    learning rate to TensorBoard (the engine's own writer: at any iterations_per_loop)."""

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
            loss = None if loss is None else _scalar(loss)
            lr = _scalar(self.model.optimizer.learning_rate)
            logging.info("step %d: %.2f steps/s, %.1f examples/s, loss %s, learning rate %.3g", step,
                         rate, rate * self.batch, loss, lr)
            with self.writer.as_default(step=step), tf.summary.record_if(True):
                tf.summary.scalar("steps_per_second", rate)
                tf.summary.scalar("examples_per_second", rate * self.batch)
                tf.summary.scalar("learning_rate", lr)
                if loss is not None:
                    tf.summary.scalar("loss", loss)
            self.writer.flush()
            self._t, self._s = now, step


class _CheckpointAndEvaluate(keras.callbacks.Callback):
    """At each save point: object checkpoint, evaluation, results files, best TF1 export."""

    def __init__(self, engine):
        super().__init__()
        self.e = engine

    def on_epoch_end(self, epoch, logs=None):
        self.e.save_and_evaluate()

    def on_train_end(self, logs=None):
        if not self.e.failed and self.e.step() != self.e.last_saved_step:
            self.e.save_and_evaluate()


class _CheckpointFiles:
    """ckpt-<step> object checkpoints of one directory. The `checkpoint` index file (what
    tf.train.latest_checkpoint reads) is rewritten atomically only after a checkpoint is
    complete, so a kill during a write leaves the previous checkpoint the latest."""

    def __init__(self, checkpoint, directory, keep):
        self.checkpoint, self.directory, self.keep = checkpoint, directory, keep
        checkpoint.save_counter  # noqa: B018  created now, so `write` saves it and restores match

    def latest(self):
        return tf.train.latest_checkpoint(self.directory)

    def save(self, step) -> str:
        name = f"ckpt-{step}"
        self.checkpoint.write(os.path.join(self.directory, name))
        _kill_point("checkpoint_written", step)
        state = tf.train.get_checkpoint_state(self.directory)
        old = [os.path.basename(p) for p in (state.all_model_checkpoint_paths if state else [])]
        kept = [p for p in old if p != name][-(self.keep - 1):] if self.keep > 1 else []
        tf.compat.v1.train.update_checkpoint_state(self.directory, name, kept + [name])
        for gone in set(old) - set(kept) - {name}:
            for f in tf.io.gfile.glob(os.path.join(self.directory, gone) + ".*"):
                tf.io.gfile.remove(f)
        return os.path.join(self.directory, name)


class _Engine:
    """State shared by the callbacks of one `train` call."""

    def __init__(self, model, checkpoint, run, evaluate_fn, export_best_fn, chief, write_dir):
        self.model, self.run, self.evaluate_fn = model, run, evaluate_fn
        self.export_best_fn = export_best_fn
        self.chief, self.write_dir = chief, write_dir
        self.files = _CheckpointFiles(checkpoint, write_dir, run.keep_checkpoint_max)
        self.writer = tf.summary.create_file_writer(os.path.join(write_dir, "eval"))
        self.history = []
        self.best = self._load_best()
        self.last_saved_step = self.step()
        self.failed = False

    def step(self):
        """Optimizer updates so far (with gradient accumulation, one per N micro-batches)."""
        return int(self.model.optimizer.iterations.numpy())

    def latest_checkpoint(self):
        return tf.train.latest_checkpoint(self.run.output_dir)

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

    def evaluated_steps(self):
        """Steps already evaluated, by this run or before a restart."""
        path = os.path.join(self.run.output_dir, EVAL_HISTORY)
        if not os.path.exists(path):
            return set()
        with open(path, encoding="utf-8") as f:
            return {h["global_step"] for h in json.load(f)}

    def _is_better(self, value):
        if self.best is None:
            return True
        old = self.best[self.run.best_metric]
        return value > old if self.run.best_mode == "max" else value < old

    def save_and_evaluate(self):
        step = self.step()
        path = self.files.save(step)
        self.last_saved_step = step
        logging.info("saved checkpoint %s at step %d", path, step)
        _kill_point("saved", step)
        self.evaluate()

    def evaluate(self):
        """Evaluate the model at its current step: summaries, eval_results.txt, best export."""
        if self.evaluate_fn is None:
            return
        step = self.step()
        results = {k: float(v) for k, v in self.evaluate_fn(self.model).items()}
        results["global_step"] = step
        self.history.append(results)
        logging.info("eval at step %d: %s", step, results)
        with self.writer.as_default(step=step), tf.summary.record_if(True):
            for k, v in results.items():
                if k != "global_step":
                    tf.summary.scalar(k, v)
        self.writer.flush()
        if not self.chief:
            return
        append_results(self.run.output_dir, results)
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
    from albert_tf.formats.tf1 import save_original_checkpoint
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
    if per_execution > 1:
        model.train_function = _step_function(model, model.train_step, per_execution)
        model.test_function = _step_function(model, model.test_step, 1)
    return model


def compile_for_inference(model, strategy=None, jit_compile=None):
    """compile for evaluate/predict without an optimizer: Keras' default one would be tracked by
    the model and collide with the training optimizer's slots when an object checkpoint of
    output_dir is restored into it ("incompatible tensor ... rm_sprop/learning_rate")."""
    strategy = strategy or tf.distribute.get_strategy()
    model.compile(optimizer=None, jit_compile=distribute.jit_compile_default(strategy, jit_compile))
    return model


def _step_function(model, step_fn, steps: int):
    """A Keras train/test function running `step_fn` `steps` times per call in one tf.function
    looping over the iterator (train: infinite data; evaluation uses steps=1 and stops at the
    end of its data).

    Replaces Keras 3's own steps_per_execution loop, which runs each step inside a tf.cond on
    an optional of the next batch; MultiWorkerMirroredStrategy's collectives cannot run there
    ("You must feed a value for placeholder tensor ... multi_step_on_iterator")."""
    from keras.src.backend.tensorflow.trainer import reduce_per_replica
    strategy = model.distribute_strategy

    @tf.function(jit_compile=bool(model.jit_compile), reduce_retracing=True)
    def one_step(data):
        outputs = strategy.run(step_fn, args=(data,))
        return reduce_per_replica(outputs, strategy, reduction="auto")

    @tf.function
    def run_steps(iterator):
        outputs = one_step(next(iterator))
        for _ in tf.range(steps - 1):
            outputs = one_step(next(iterator))
        return outputs

    if steps == 1:
        return lambda iterator: one_step(next(iterator))
    return run_steps


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
        os.makedirs(run.output_dir, exist_ok=True)
    micro = run.gradient_accumulation_steps
    save_every = min(run.save_checkpoints_steps, run.num_train_steps)
    steps_per_epoch = save_every * micro  # fit counts micro-batches
    if run.seed is not None:
        keras.utils.set_random_seed(run.seed)
    with strategy.scope():
        model = model_fn()
        optimizer = optimizer_fn()
        optimizer.build(model.trainable_variables)
        compile_for_training(model, optimizer, run, strategy, steps_per_epoch)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer,
                                         seed_states=_seed_states(model))
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
    if latest and evaluate_fn is not None and start not in engine.evaluated_steps():
        engine.evaluate()  # the previous run was stopped between this checkpoint and its eval
    if start >= run.num_train_steps:
        logging.info("already trained to step %d >= num_train_steps %d", start, run.num_train_steps)
        return TrainResult(model, start, engine.best, engine.history)
    if global_batch_size % micro:
        raise ValueError(f"train batch size {global_batch_size} is not divisible by "
                         f"--gradient_accumulation_steps {micro}")
    # One optimizer step consumes `micro` micro-batches that together make the global batch.
    dataset = distribute.distribute_dataset(
        strategy, _resumed_dataset_fn(train_dataset_fn, start * micro), global_batch_size // micro)
    callbacks = [
        _StopOnNonFiniteLoss(engine, model.steps_per_execution),
        _StopAtStep(run.num_train_steps, engine.step),
        _StepRateLogger(run.log_every_steps, global_batch_size,
                        tf.summary.create_file_writer(os.path.join(write_dir, "train")), engine.step),
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
