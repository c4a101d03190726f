"""Shared fine-tuning machinery for GLUE, SQuAD and RACE: datasets over cached records with
eval padding, prediction, optimizer and training through the one engine.

A task supplies its model, its cached records and a function from predictions to metrics;
nothing of the training loop is written per task.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import numpy as np
import tensorflow as tf

from albert_tf.engine import distribute, training
from albert_tf.engine.records import decode, shuffled_epochs
from albert_tf.engine.task import FineTuningTask, check_task


@dataclasses.dataclass
class FineTuningOptions:
    """The flags every fine-tuning driver shares (Google's names)."""
    output_dir: str
    init_checkpoint: Optional[str] = None
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    train_step: int = 1000
    warmup_step: int = 0
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    optimizer: str = "adamw"
    iterations_per_loop: int = 1
    jit_compile: Optional[bool] = None
    gradient_accumulation_steps: int = 1
    log_every_steps: int = 100
    seed: Optional[int] = 12345
    verbose: object = "auto"


def fake_record(spec: dict) -> dict:
    """A record of zeros (is_real_example = 0) that pads eval/predict sets to whole batches."""
    kinds = {"int64": tf.int32, "float": tf.float32}
    return {name: tf.zeros([length], kinds[kind]) for name, (kind, length) in spec.items()}


def records_dataset(path, spec: dict, batch_size: int, is_training: bool,
                    num_records: Optional[int] = None, seed=None,
                    input_context: Optional[tf.distribute.InputContext] = None):
    """Training: shuffled, repeated batches. Eval/predict: every record once, in order, then fake
    records to a whole number of batches (static shapes for TPU/XLA; fakes have weight 0)."""
    ds = tf.data.TFRecordDataset(str(path)).map(lambda s: decode(s, spec),
                                                num_parallel_calls=tf.data.AUTOTUNE)
    if is_training:
        if input_context is not None and input_context.num_input_pipelines > 1:
            ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        ds = shuffled_epochs(ds, 10000, seed)
    else:
        if num_records is None:
            raise ValueError("eval/predict datasets need num_records to pad to whole batches")
        pad = (-num_records) % batch_size
        if pad:
            ds = ds.concatenate(tf.data.Dataset.from_tensors(fake_record(spec)).repeat(pad))
        # every worker predicts every record (in order) under multi-worker strategies; Keras'
        # default FILE auto-sharding fails on one file and would split the outputs across hosts
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        ds = ds.with_options(options)
    return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def predict_records(model, path, spec, num_records: int, batch_size: int) -> dict:
    """Model outputs for every real record, in file order, as numpy arrays."""
    ds = records_dataset(path, spec, batch_size, is_training=False, num_records=num_records)
    outputs = model.predict(ds, verbose=0)
    return {k: np.asarray(v)[:num_records] for k, v in outputs.items()}


def optimizer_fn(opts: FineTuningOptions):
    from albert_tf.engine.optimization import create_optimizer
    return lambda: create_optimizer(opts.learning_rate, opts.train_step, opts.warmup_step,
                                    optimizer=opts.optimizer,
                                    gradient_accumulation_steps=opts.gradient_accumulation_steps)


def build_eval_model(model_fn: Callable, opts: FineTuningOptions, strategy=None, checkpoint=None):
    """A task model with weights from `checkpoint` (ours or Google's), the newest checkpoint of
    output_dir, or init_checkpoint, in that order; compiled for prediction."""
    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        model = training.compile_for_inference(model_fn(), strategy, opts.jit_compile)
    source = checkpoint or tf.train.latest_checkpoint(opts.output_dir) or opts.init_checkpoint
    if source:
        training.init_from_checkpoint(model, source, require_encoder=True)
    return model


def finetune(model_fn: Callable, train_records: tuple, spec: dict, opts: FineTuningOptions,
             strategy=None, *, evaluate_fn=None, best_metric=None, best_mode="max"):
    """Train a task model on (path, count) records through the engine, evaluating each saved
    checkpoint with `evaluate_fn(model) -> metrics` and keeping the best as model.ckpt-best."""
    path, _ = train_records
    run = training.RunConfig(
        output_dir=opts.output_dir, num_train_steps=opts.train_step,
        save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=opts.keep_checkpoint_max, iterations_per_loop=opts.iterations_per_loop,
        jit_compile=opts.jit_compile, best_metric=best_metric if evaluate_fn else None,
        best_mode=best_mode, log_every_steps=opts.log_every_steps,
        gradient_accumulation_steps=opts.gradient_accumulation_steps, verbose=opts.verbose,
        seed=opts.seed)
    dataset_fn = lambda batch, ctx: records_dataset(path, spec, batch, True, seed=opts.seed,
                                                    input_context=ctx)
    return training.train(model_fn, optimizer_fn(opts), dataset_fn, opts.train_batch_size, run,
                          strategy, evaluate_fn=evaluate_fn, init_checkpoint=opts.init_checkpoint)


def warn_if_random_init(opts: FineTuningOptions, do_train: bool) -> bool:
    """One WARNING when training starts from random weights (no --init_checkpoint and nothing
    to resume in output_dir): the classic "ALBERT gets 50% on SST-2" run. True if warned."""
    from absl import logging
    if not do_train or opts.init_checkpoint or tf.train.latest_checkpoint(opts.output_dir):
        return False
    logging.warning("--init_checkpoint is not set: training starts from random weights, not a "
                    "pretrained ALBERT (pass the released model.ckpt-best to fine-tune it)")
    return True


def run_finetuning(task: FineTuningTask, model_fn: Callable, opts: FineTuningOptions, strategy=None, *,
                   do_train=False, do_eval=False, do_predict=False, export_fn=None) -> dict:
    """Google's fine-tuning flow for any task: train (evaluating each checkpoint on dev, the best
    kept as model.ckpt-best), evaluate the best, predict the test set, export.

    `task` is a FineTuningTask (albert_tf/engine/task.py): `records(split) -> (path, count)`,
    `spec`, `best_metric`, `evaluate(model, batch_size) -> dict` and
    `write_predictions(model, output_dir, batch_size)`.
    """
    check_task(task)
    if not (do_train or do_eval or do_predict or export_fn):
        raise ValueError("at least one of --do_train, --do_eval, --do_predict (or an export) is needed")
    warn_if_random_init(opts, do_train)
    with training.output_dir_lock(opts.output_dir, strategy):
        return _run_finetuning(task, model_fn, opts, strategy, do_train, do_eval, do_predict,
                               export_fn)


def _run_finetuning(task, model_fn, opts, strategy, do_train, do_eval, do_predict, export_fn):
    import os
    from absl import logging
    os.makedirs(opts.output_dir, exist_ok=True)
    results = {}
    if do_train:
        evaluate_fn = (lambda m: task.evaluate(m, opts.eval_batch_size)) if do_eval else None
        finetune(model_fn, task.records("train"), task.spec, opts, strategy,
                 evaluate_fn=evaluate_fn, best_metric=task.best_metric)
    best = os.path.join(opts.output_dir, training.BEST_CHECKPOINT)
    checkpoint = best if os.path.exists(best + ".index") else None
    if not (do_eval or do_predict or export_fn):
        return results
    model = build_eval_model(model_fn, opts, strategy, checkpoint)
    if do_eval:
        results = task.evaluate(model, opts.eval_batch_size)
        if distribute.is_chief(strategy):
            training.append_results(opts.output_dir, {"checkpoint": checkpoint or "latest", **results})
        logging.info("eval results: %s", results)
    if do_predict:
        results["prediction_files"] = task.write_predictions(model, opts.output_dir,
                                                             opts.predict_batch_size)
    if export_fn:
        results["export_dir"] = export_fn(model)
    return results
