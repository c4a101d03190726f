"""Shared fine-tuning machinery for GLUE, SQuAD and RACE: datasets over cached records with
eval padding, prediction, optimizer and training through the one engine.

A task supplies its model, its cached records and a function from predictions to metrics;
nothing of the training loop is written per task.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from typing import Callable, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.engine import bucketing, distribute, training
from albert_tf.engine.compiling import compile_for_inference
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.engine.init_checkpoint import init_from_checkpoint
from albert_tf.engine.optimizers import create_optimizer
from albert_tf.engine.records import decode, shuffled_epochs
from albert_tf.engine.results import RESULTS_FILE, append_results, format_metrics
from albert_tf.engine.run_config import RunConfig
from albert_tf.engine.run_lock import output_dir_lock
from albert_tf.engine.run_summary import RunSummary
from albert_tf.engine.save_points import BEST_CHECKPOINT, checkpoint_exists, latest_checkpoint
from albert_tf.engine.task_protocol import FineTuningTask, check_task
from albert_tf.modeling.padding_free import set_padding_free
from albert_tf.text.vocab_files import read_spm_model

# the run folder's copy of its SentencePiece model (a name formats.common.find_spm_model reads)
RUN_SPM_MODEL = "spm.model"

_BUCKETING = contextvars.ContextVar("bucket_by_length", default=True)
_TPU_BUCKETS = contextvars.ContextVar("tpu_buckets", default=False)


@contextlib.contextmanager
def bucket_by_length(enabled: bool, tpu_buckets: bool = False):
    """A context manager that switches length bucketing of evaluation and prediction.

    Inside the `with` block, `predict_records` (which every task's `evaluate` and
    `write_predictions` use) cuts batches to bucket lengths or not, with the TPU's few buckets
    or the fine ones (`bucket_lengths`). `run_finetuning` enters it with the run's settings, so
    they reach the tasks without any change to the task interface. Outside any block,
    bucketing is on with the fine buckets.

    Args:
        enabled: bool. Whether evaluation and prediction batches are cut to bucket lengths.
        tpu_buckets: bool. Use `bucketing.tpu_bucket_lengths` (a few buckets, one XLA compile
            each) instead of `bucket_lengths`. Default False.

    Yields:
        None. The settings hold until the block exits.

    Example:

    >>> import albert_tf
    >>> from albert_tf.engine.finetuning import run_buckets
    >>> run_buckets(128)
    (16, 32, 48, 64, 96, 128)
    >>> with albert_tf.bucket_by_length(True, tpu_buckets=True):
    ...     run_buckets(128)
    (32, 64, 128)
    """
    tokens = _BUCKETING.set(bool(enabled)), _TPU_BUCKETS.set(bool(tpu_buckets))
    try:
        yield
    finally:
        _BUCKETING.reset(tokens[0])
        _TPU_BUCKETS.reset(tokens[1])


def run_buckets(seq_length: int) -> tuple:
    """The bucket lengths of this run: few on TPU (each shape is one XLA compile), else fine."""
    if _TPU_BUCKETS.get():
        return bucketing.tpu_bucket_lengths(seq_length)
    return bucketing.bucket_lengths(seq_length)


def fake_record(spec: dict) -> dict:
    """A record of zeros (is_real_example = 0) that pads eval/predict sets to whole batches."""
    kinds = {"int64": tf.int32, "float": tf.float32}
    return {name: tf.zeros([length], kinds[kind]) for name, (kind, length) in spec.items()}


def records_dataset(
    path,
    spec: dict,
    batch_size: int,
    is_training: bool,
    *,
    num_records: Optional[int] = None,
    seed=None,
    input_context: Optional[tf.distribute.InputContext] = None,
    seq_length: Optional[int] = None,
    buckets: Optional[tuple] = None,
):
    """Training: shuffled, repeated batches (cut to `buckets`, by default this run's bucket
    lengths, when `seq_length` is given, see engine/bucketing.py). Eval/predict: every record once,
    in order, then fake records to a
    whole number of batches (static shapes for TPU/XLA; fakes have weight 0)."""
    ds = tf.data.TFRecordDataset(str(path)).map(
        lambda s: decode(s, spec), num_parallel_calls=tf.data.AUTOTUNE
    )
    if is_training:
        pipelines = input_context.num_input_pipelines if input_context is not None else 1
        if pipelines > 1:
            ds = ds.shard(pipelines, input_context.input_pipeline_id)
        ds = shuffled_epochs(ds, 10000, seed)
        # one bucket (max_seq_length ≤ 16): nothing to cut, Google's order; several input
        # pipelines (hosts) would draw their buckets apart, and TPU replicas must share shapes
        buckets = tuple(buckets or run_buckets(seq_length)) if seq_length else ()
        if seq_length and pipelines == 1 and len(buckets) > 1:
            replicas = max(1, input_context.num_replicas_in_sync) if input_context else 1
            return bucketing.bucketed_batches(
                ds, spec, seq_length, batch_size, seed, replicas, buckets=buckets
            ).prefetch(tf.data.AUTOTUNE)
    else:
        if num_records is None:
            raise ValueError("eval/predict datasets need num_records to pad to whole batches")
        ds = _padded_in_order(ds, spec, num_records, batch_size)
    return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def _padded_in_order(ds, spec, num_records, batch_size):
    pad = (-num_records) % batch_size
    if pad:
        ds = ds.concatenate(tf.data.Dataset.from_tensors(fake_record(spec)).repeat(pad))
    # a known length: Keras' predict then stops at the end without a "ran out of data" warning
    ds = ds.apply(tf.data.experimental.assert_cardinality(num_records + pad))
    return _every_worker(ds)


def _every_worker(ds):
    """`ds` predicted whole by every worker (in order) under multi-worker strategies; Keras'
    default FILE auto-sharding fails on one file and would split the outputs across hosts."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return ds.with_options(options)


def predict_records(
    model,
    path,
    spec,
    num_records: int,
    batch_size: int,
    seq_length: Optional[int] = None,
    token_outputs: tuple = (),
) -> dict:
    """Model outputs for every real record, in file order, as numpy arrays.

    With `seq_length` (and bucketing on, see `bucket_by_length`) the file is read once into
    memory (eval/predict sets are dev/test sets), the records predicted bucket by bucket, each
    batch cut to its bucket length, and the outputs put back in file order; the per-token
    outputs named in `token_outputs` are padded back to seq_length with -inf (the positions
    past the bucket were never computed: padding, not candidates)."""
    if not seq_length or not _BUCKETING.get() or len(run_buckets(seq_length)) == 1:
        ds = records_dataset(path, spec, batch_size, is_training=False, num_records=num_records)
        outputs = model.predict(ds, verbose=0)
        return {k: np.asarray(v)[:num_records] for k, v in outputs.items()}
    return _predict_bucketed(model, path, spec, num_records, batch_size, seq_length, token_outputs)


def _read_all(path, spec: dict) -> dict:
    """Every record of `path` decoded in one pass, as {name: numpy array [records, length]}
    (int64 features as int32, as `decode` gives them)."""
    parts = {name: [] for name in spec}
    ds = (
        tf.data.TFRecordDataset(str(path))
        .batch(1024)
        .map(lambda s: decode(s, spec), num_parallel_calls=tf.data.AUTOTUNE)
    )
    for batch in ds.prefetch(tf.data.AUTOTUNE):
        for name, value in batch.items():
            parts[name].append(value.numpy())
    empty = {"int64": np.int32, "float": np.float32}
    return {
        name: np.concatenate(parts[name]) if parts[name] else np.zeros((0, length), empty[kind])
        for name, (kind, length) in spec.items()
    }


def _bucket_dataset(arrays, members, tokens, seq_length, length, batch_size):
    """Batches of the records `members` (-1: a fake record of zeros, is_real_example 0), in
    that order, every per-token feature cut to `length` positions per row."""
    fake = members < 0
    rows = {}
    for name, value in arrays.items():
        rows[name] = value[np.where(fake, 0, members)]
        rows[name][fake] = 0
    rows = bucketing.slice_batch(rows, tokens, seq_length, int(length))
    ds = tf.data.Dataset.from_tensor_slices(rows).batch(batch_size, drop_remainder=True)
    return _every_worker(ds).prefetch(tf.data.AUTOTUNE)


def _predict_bucketed(model, path, spec, num_records, batch_size, seq_length, token_outputs):
    tokens = bucketing.token_features(spec, seq_length)
    arrays = _read_all(path, spec)
    count = len(arrays["input_mask"])
    if count != num_records:
        raise ValueError(f"{path}: {count} records, expected {num_records}")
    lengths = (
        bucketing.record_lengths(arrays["input_mask"], tokens["input_mask"], seq_length).numpy()
        if count
        else np.zeros(0, np.int32)
    )
    results = {}
    for length, batch, members in bucketing.eval_batches_plan(
        lengths, batch_size, run_buckets(seq_length)
    ):
        real = members[members >= 0]
        ds = _bucket_dataset(arrays, members, tokens, seq_length, length, batch)
        outputs = model.predict(ds, verbose=0)
        for name, value in outputs.items():
            value = np.asarray(value)[: len(real)]
            if name in token_outputs and value.shape[1] < seq_length:
                fill = [(0, 0), (0, seq_length - value.shape[1])] + [(0, 0)] * (value.ndim - 2)
                value = np.pad(value, fill, constant_values=-np.inf)
            if name not in results:
                results[name] = np.zeros((num_records,) + value.shape[1:], value.dtype)
            if results[name].shape[1:] != value.shape[1:]:
                raise ValueError(
                    f"output {name!r} changes shape with the bucket length "
                    f"({value.shape[1:]}): name it in token_outputs"
                )
            results[name][real] = value
    return results


def optimizer_fn(opts: FineTuningOptions):
    return lambda: create_optimizer(
        opts.learning_rate,
        opts.train_step,
        opts.warmup_step,
        optimizer=opts.optimizer,
        gradient_accumulation_steps=opts.gradient_accumulation_steps,
    )


def padding_free_model_fn(model_fn: Callable, opts: FineTuningOptions) -> Callable:
    """`model_fn` whose model encodes padding-free when opts.padding_free (the row-wise work on
    real tokens only: albert_tf/modeling/padding_free.py; not under XLA, which needs static
    shapes)."""
    return lambda: set_padding_free(model_fn(), opts.padding_free, strict=False)


def build_eval_model(model_fn: Callable, opts: FineTuningOptions, strategy=None, checkpoint=None):
    """A task model with weights from `checkpoint` (albert_tf's or Google's), the newest
    checkpoint of output_dir, or init_checkpoint, in that order; compiled for prediction."""
    strategy = strategy or tf.distribute.get_strategy()
    with strategy.scope():
        model = compile_for_inference(
            padding_free_model_fn(model_fn, opts)(), strategy, opts.jit_compile
        )
    source = checkpoint or latest_checkpoint(opts.output_dir) or opts.init_checkpoint
    if source:
        init_from_checkpoint(model, source, require_encoder=True)
    return model


def finetune(
    model_fn: Callable,
    train_records: tuple,
    spec: dict,
    opts: FineTuningOptions,
    strategy=None,
    *,
    evaluate_fn=None,
    best_metric=None,
    best_mode="max",
    seq_length: Optional[int] = None,
):
    """Train a task model on (path, count) records through the engine, evaluating each saved
    checkpoint with `evaluate_fn(model) -> metrics` and keeping the best as model.ckpt-best.
    Batches are cut to bucket lengths when opts.bucket_by_length and `seq_length` is given."""
    path, _ = train_records
    run = RunConfig(
        output_dir=opts.output_dir,
        num_train_steps=opts.train_step,
        save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=opts.keep_checkpoint_max,
        iterations_per_loop=opts.iterations_per_loop,
        jit_compile=opts.jit_compile,
        best_metric=best_metric if evaluate_fn else None,
        best_mode=best_mode,
        log_every_steps=opts.log_every_steps,
        gradient_accumulation_steps=opts.gradient_accumulation_steps,
        verbose=opts.verbose,
        seed=opts.seed,
    )
    seq_length = seq_length if opts.bucket_by_length else None
    # built here, not from the context: tf.distribute may call dataset_fn on another thread
    buckets = run_buckets(seq_length) if seq_length else None
    dataset_fn = lambda batch, ctx: records_dataset(
        path,
        spec,
        batch,
        True,
        seed=opts.seed,  # noqa: E731
        input_context=ctx,
        seq_length=seq_length,
        buckets=buckets,
    )
    return training.train(
        padding_free_model_fn(model_fn, opts),
        optimizer_fn(opts),
        dataset_fn,
        global_batch_size=opts.train_batch_size,
        run=run,
        strategy=strategy,
        evaluate_fn=evaluate_fn,
        init_checkpoint=opts.init_checkpoint,
    )


def warn_if_random_init(opts: FineTuningOptions, do_train: bool) -> bool:
    """One WARNING when training starts from random weights (no --init_checkpoint and nothing
    to resume in output_dir): the classic "ALBERT gets 50% on SST-2" run. True if warned."""
    if not do_train or opts.init_checkpoint or latest_checkpoint(opts.output_dir):
        return False
    logging.warning(
        "init_checkpoint is not set: training starts from random weights, not a "
        "pretrained ALBERT (pass the released model.ckpt-best to fine-tune it)"
    )
    return True


def run_finetuning(
    task: FineTuningTask,
    model_fn: Callable,
    opts: FineTuningOptions,
    strategy=None,
    *,
    do_train=False,
    do_eval=False,
    do_predict=False,
    export_fn=None,
) -> dict:
    """Runs Google's fine-tuning flow for any task: train, evaluate, predict, export.

    Training evaluates each saved checkpoint on the dev set (with `do_eval`) and keeps the best
    by `task.best_metric` as output_dir/model.ckpt-best. Then the best checkpoint (else the
    newest one, else `opts.init_checkpoint`) is evaluated on dev, predicts the test set and is
    exported, as asked. A run restarted on the same output_dir resumes its training. The
    output_dir is locked for the run, so two runs cannot write it at once.

    Args:
        task: A `FineTuningTask` (albert_tf/engine/task_protocol.py): an object with
            `records(split) -> (path, count)`, `spec`, `best_metric`,
            `evaluate(model, batch_size) -> dict` and
            `write_predictions(model, output_dir, batch_size) -> list of paths`.
        model_fn: Callable with no arguments that builds the task model (an
            `AlbertTaskModel`, such as `AlbertClassifier`).
        opts: `FineTuningOptions`. The run's settings.
        strategy: `tf.distribute.Strategy` or None. Default: the current strategy.
        do_train: bool. Train to `opts.train_step` updates. Default False.
        do_eval: bool. Evaluate on dev (each checkpoint while training, then the best).
            Default False.
        do_predict: bool. Write the test-set predictions. Default False.
        export_fn: Callable `model -> export directory`, or None. Exports the final model.

    Returns:
        dict: the dev metrics (with `do_eval`), `prediction_files` (with `do_predict`) and
        `export_dir` (with `export_fn`); empty when the run only trains.

    Raises:
        ValueError: when none of `do_train`, `do_eval`, `do_predict` and `export_fn` is given.
        TypeError: when `task` lacks a member of the task protocol.
        OutputDirLockedError: when another live run holds `opts.output_dir`.
    """
    check_task(task)
    if not (do_train or do_eval or do_predict or export_fn):
        raise ValueError("at least one of do_train, do_eval, do_predict (or an export) is needed")
    warn_if_random_init(opts, do_train)
    with (
        output_dir_lock(opts.output_dir, strategy),
        bucket_by_length(opts.bucket_by_length, opts.tpu_buckets),
    ):
        fileio.makedirs(opts.output_dir)
        summary = RunSummary(opts.output_dir, os.path.basename(sys.argv[0] or "albert_tf"))
        spm = getattr(getattr(task, "encoder", task), "spm_model_file", None)
        if spm and distribute.is_chief(strategy):  # conversions of the folder carry it
            summary.write_in(RUN_SPM_MODEL, read_spm_model(spm), "its SentencePiece model")
        if do_train:
            trained = _train_task(task, model_fn, opts, strategy, evaluate=do_eval)
            _note_training(summary, trained, opts)
            _note_model(summary, trained.model, task)
        results = {}
        if do_eval or do_predict or export_fn:
            results = _use_best_checkpoint(
                task,
                model_fn,
                opts,
                strategy,
                do_eval=do_eval,
                do_predict=do_predict,
                export_fn=export_fn,
                summary=summary,
            )
        summary.finish(distribute.is_chief(strategy), show=opts.verbose != 0)
        return results


def _note_training(summary, trained, opts):
    """The training outputs of a run in its summary: best checkpoint, TensorBoard folders."""
    summary.global_step = trained.global_step
    best = fileio.join(opts.output_dir, BEST_CHECKPOINT)
    if trained.best and fileio.exists(best + ".index"):
        metric = {k: v for k, v in trained.best.items() if k != "global_step"}
        summary.add(
            best,
            f"best checkpoint (step {trained.best.get('global_step')}; {format_metrics(metric)})",
        )
    last = fileio.join(opts.output_dir, f"ckpt-{trained.global_step}")
    if checkpoint_exists(last):
        summary.add(last, "last checkpoint (resumable: model + optimizer)")
    summary.add(opts.output_dir, f"TensorBoard: tensorboard --logdir {opts.output_dir}")


def _note_model(summary, model, task):
    """What the run trains, so a converter can rebuild it with its head (run_summary.json)."""
    summary.model = {
        "class": type(model).__name__,
        "config": model.get_config(),
        "task": getattr(task, "task", None) or type(task).__name__,
        "labels": getattr(task, "label_names", None),
    }


def _train_task(task, model_fn, opts, strategy, *, evaluate):
    """Fine-tunes on the task's train records, evaluating each checkpoint on dev if asked."""
    evaluate_fn = (lambda m: task.evaluate(m, opts.eval_batch_size)) if evaluate else None
    return finetune(
        model_fn,
        task.records("train"),
        task.spec,
        opts,
        strategy,
        evaluate_fn=evaluate_fn,
        best_metric=task.best_metric,
        seq_length=getattr(task, "max_seq_length", None),
    )


def _use_best_checkpoint(
    task, model_fn, opts, strategy, *, do_eval, do_predict, export_fn, summary
):
    """Evaluates, predicts and exports with model.ckpt-best (else the latest checkpoint)."""
    best = fileio.join(opts.output_dir, BEST_CHECKPOINT)
    checkpoint = best if fileio.exists(best + ".index") else None
    model = build_eval_model(model_fn, opts, strategy, checkpoint)
    if not summary.model:
        _note_model(summary, model, task)
    results = {}
    if do_eval:
        results = task.evaluate(model, opts.eval_batch_size)
        if distribute.is_chief(strategy):
            scored = fileio.basename(checkpoint) if checkpoint else "the latest checkpoint"
            append_results(
                opts.output_dir,
                {"checkpoint": checkpoint or "latest", **results},
                title=f"final eval of {scored}",
            )
        logging.info("final eval: %s", format_metrics(results))
        summary.metrics = dict(results)
        summary.add(fileio.join(opts.output_dir, RESULTS_FILE), "every evaluation, by checkpoint")
    if do_predict:
        results["prediction_files"] = task.write_predictions(
            model, opts.output_dir, opts.predict_batch_size
        )
        for path in results["prediction_files"] or ():
            summary.add(path, "test-set predictions")
    if export_fn:
        results["export_dir"] = export_fn(
            distribute.float32_model(
                model, lambda: build_eval_model(model_fn, opts, strategy, checkpoint)
            )
        )
        summary.add(results["export_dir"], "export (see its README.md for how to load it)")
        for name in sorted(fileio.listdir(results["export_dir"])):
            summary.add(fileio.join(results["export_dir"], name.rstrip("/")), "  in the export")
        summary.warnings += getattr(export_fn, "warnings", [])
    return results
