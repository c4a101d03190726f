"""Compiling a model for training (XLA, loss scaling, several steps per execution) or for
inference, with a step loop that MultiWorkerMirroredStrategy's collectives can run in."""

from __future__ import annotations

import contextlib
import math

import keras
from keras.src.backend.tensorflow.trainer import reduce_per_replica
import tensorflow as tf

from albert_tf.engine import distribute
from albert_tf.engine.run_config import RunConfig


def compile_for_training(model, optimizer, run: RunConfig, strategy, steps_per_epoch=None):
    """compile with XLA (default on for TPU), steps_per_execution = iterations_per_loop (made to
    divide the steps between checkpoints), and dynamic loss scaling under mixed_float16."""
    if keras.mixed_precision.global_policy().name == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    per_execution = run.iterations_per_loop
    if steps_per_epoch:
        per_execution = math.gcd(per_execution, steps_per_epoch)
    model.compile(
        optimizer=optimizer,
        jit_compile=distribute.jit_compile_default(strategy, run.jit_compile),
        steps_per_execution=per_execution,
    )
    if per_execution > 1 and _on_tensorflow():  # Keras' own loop on JAX (no collectives issue)
        model.train_function = step_function(model, model.train_step, per_execution)
        model.test_function = step_function(model, model.test_step, 1)
    return model


@contextlib.contextmanager
def one_step_per_call(model):
    """Within: steps_per_execution 1. A model compiled for training has the engine's one-step
    test_function but steps_per_execution = iterations_per_loop, so Keras' evaluate would call
    it once per iterations_per_loop batches and score only every n-th batch."""
    if not _on_tensorflow():
        with _jax_functions_of(model, 1, ("test_function", "predict_function")):
            yield model
        return
    per_execution, model.steps_per_execution = model.steps_per_execution, 1
    try:
        yield model
    finally:
        model.steps_per_execution = per_execution


@contextlib.contextmanager
def single_step_training(model):
    """Within: the training function runs one step per call, so a catch-up epoch of any length
    fits (the compiled function of --iterations_per_loop steps comes back afterwards)."""
    if not _on_tensorflow():
        with _jax_functions_of(model, 1, ("train_function",)):
            yield
        return
    saved = model.steps_per_execution, model.train_function
    if saved[0] > 1:
        model.steps_per_execution = 1
        model.train_function = step_function(model, model.train_step, 1)
    try:
        yield
    finally:
        model.steps_per_execution, model.train_function = saved


def _on_tensorflow() -> bool:
    return keras.backend.backend() == "tensorflow"


@contextlib.contextmanager
def _jax_functions_of(model, steps: int, names: tuple):
    """Within: the model runs `steps` steps per call. On JAX, Keras compiles its train / test /
    predict functions for the steps_per_execution they are first made with; the ones for
    `steps` are kept on the model across calls (one XLA compile each), the others come back."""
    kept = model.__dict__.setdefault("_albert_functions_by_steps", {})
    outer = model.steps_per_execution
    saved = {name: getattr(model, name) for name in names}
    model.steps_per_execution = steps
    for name in names:
        setattr(model, name, kept.get((steps, name)))
    try:
        yield
    finally:
        for name in names:
            kept[(steps, name)] = getattr(model, name)
            setattr(model, name, saved[name])
        model.steps_per_execution = outer


def compile_for_inference(model, strategy=None, jit_compile=None):
    """compile for evaluate/predict without an optimizer: Keras' default one would be tracked by
    the model and collide with the training optimizer's slots when an object checkpoint of
    output_dir is restored into it ("incompatible tensor ... rm_sprop/learning_rate")."""
    strategy = strategy or tf.distribute.get_strategy()
    model.compile(optimizer=None, jit_compile=distribute.jit_compile_default(strategy, jit_compile))
    return model


def step_function(model, step_fn, steps: int):
    """A Keras train/test function running `step_fn` `steps` times per call in one tf.function
    looping over the iterator (train: infinite data; evaluation uses steps=1 and stops at the
    end of its data).

    Replaces Keras 3's own steps_per_execution loop, which runs each step inside a tf.cond on
    an optional of the next batch; MultiWorkerMirroredStrategy's collectives cannot run there
    ("You must feed a value for placeholder tensor ... multi_step_on_iterator")."""
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
