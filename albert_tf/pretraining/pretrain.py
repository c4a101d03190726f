"""Pretraining ALBERT with masked-LM + sentence-order prediction on Google's TFRecords,
through the shared training engine (`albert_tf.engine.training.train`)."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Optional

from absl import logging
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.core.config import AlbertConfig
from albert_tf.engine import distribute, training
from albert_tf.engine.compiling import compile_for_inference, one_step_per_call
from albert_tf.engine.init_checkpoint import init_from_checkpoint
from albert_tf.engine.optimizers import create_optimizer
from albert_tf.engine.results import RESULTS_FILE, append_results, format_metrics
from albert_tf.engine.run_config import RunConfig
from albert_tf.engine.run_lock import output_dir_lock
from albert_tf.engine.run_summary import RunSummary
from albert_tf.engine.save_points import BEST_CHECKPOINT, latest_checkpoint
from albert_tf.modeling.albert_model import AlbertPretrainer
from albert_tf.pretraining.input import count_records, pretraining_dataset


@dataclasses.dataclass
class PretrainingOptions:
    """The settings of a pretraining run: run_pretraining.py's flags, with Google's defaults.

    The defaults are those of Google's ALBERT pretraining (LAMB, learning rate 0.00176, batch
    4096, 125k steps with 3125 warmup steps, sequences of 512 with 20 predictions).

    Args:
        input_file: str. The training TFRecords (Google's `create_pretraining_data.py` layout,
            e.g. from `albert_tf.build_pretraining_data`): comma-separated paths, globs
            allowed. Required.
        output_dir: str. Where checkpoints, summaries and eval results go. Required.
        eval_input_file: str or None. The TFRecords to evaluate on; None: `input_file`.
        init_checkpoint: str or None. A checkpoint (Google TF1 or albert_tf) that initialises
            a fresh run; ignored when output_dir already has a checkpoint to resume from.
        max_seq_length: int. The sequence length of the records. Default 512.
        max_predictions_per_seq: int. The masked positions per sequence in the records.
            Default 20.
        do_train: bool. Train. Default True.
        do_eval: bool. Evaluate (each saved checkpoint when training; else the newest
            checkpoint once). Default False.
        train_batch_size: int. The global training batch. Default 4096.
        eval_batch_size: int. The global evaluation batch. Default 64.
        optimizer: str. "lamb" (default) or "adamw".
        learning_rate: float. The peak learning rate. Default 0.00176.
        poly_power: float. The power of the polynomial decay. Default 1.0.
        num_train_steps: int. The number of optimizer updates. Default 125000.
        num_warmup_steps: int. The number of linear warmup updates. Default 3125.
        start_warmup_step: int. The update at which warmup starts. Default 0.
        save_checkpoints_steps: int. Updates between checkpoints (and evaluations).
            Default 5000.
        keep_checkpoint_max: int. The number of recent checkpoints kept. Default 5.
        iterations_per_loop: int. Steps per compiled call (Keras `steps_per_execution`).
            Default 1000.
        max_eval_steps: int. The most batches one evaluation reads. Default 100.
        init_from_group0: bool. Initialise every parameter group from group 0 of
            `init_checkpoint` (Google's `--init_from_group0`). Default False.
        jit_compile: bool or None. Compile the train step with XLA; None: on for TPU only.
        gradient_accumulation_steps: int. Micro-batches per update. Default 1.
        bias_correction: bool. Adam's bias correction (Google's optimizers have none).
            Default False.
        log_every_steps: int. Steps between steps-per-second log lines and summaries.
            Default 100.
        seed: int or None. The seed of the input shuffling and of Keras (weights, dropout);
            None: not seeded.
        verbose: Keras `fit` verbosity: "auto" (default), 0, 1 or 2; 0 also leaves out the
            closing summary (run_summary.json is still written).
    """

    input_file: str
    output_dir: str
    eval_input_file: Optional[str] = None
    init_checkpoint: Optional[str] = None
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    do_train: bool = True
    do_eval: bool = False
    train_batch_size: int = 4096
    eval_batch_size: int = 64
    optimizer: str = "lamb"
    learning_rate: float = 0.00176
    poly_power: float = 1.0
    num_train_steps: int = 125000
    num_warmup_steps: int = 3125
    start_warmup_step: int = 0
    save_checkpoints_steps: int = 5000
    keep_checkpoint_max: int = 5
    iterations_per_loop: int = 1000
    max_eval_steps: int = 100
    init_from_group0: bool = False
    jit_compile: Optional[bool] = None
    gradient_accumulation_steps: int = 1
    bias_correction: bool = False
    log_every_steps: int = 100
    seed: Optional[int] = None
    verbose: object = "auto"


def _model_fn(config, opts):
    return lambda: AlbertPretrainer(config)


def _optimizer_fn(opts):
    return lambda: create_optimizer(
        opts.learning_rate,
        opts.num_train_steps,
        opts.num_warmup_steps,
        optimizer=opts.optimizer,
        poly_power=opts.poly_power,
        start_warmup_step=opts.start_warmup_step,
        bias_correction=opts.bias_correction,
        gradient_accumulation_steps=opts.gradient_accumulation_steps,
    )


def _eval_steps(opts, strategy=None) -> int:
    """The batches one evaluation scores: max_eval_steps, or fewer when the evaluation
    records hold fewer whole batches (batches are whole: static shapes, as Google's input_fn).

    Args:
        opts: `PretrainingOptions`. The run's settings.
        strategy: `tf.distribute.Strategy` or None. Under MultiWorkerMirroredStrategy each
            worker's pipeline reads its own shard of the records.

    Returns:
        int: the evaluation steps, at least 1.

    Raises:
        ValueError: when the records are fewer than one batch of eval_batch_size.
    """
    files = opts.eval_input_file or opts.input_file
    have = count_records(files, opts.max_eval_steps * opts.eval_batch_size)
    pipelines = _input_pipelines(strategy)
    # the smallest shard (records are dealt round-robin) sets the steps every worker can take
    per_pipeline = max(1, opts.eval_batch_size // pipelines)
    steps = min(opts.max_eval_steps, (have // pipelines) // per_pipeline)
    if steps == 0:
        raise ValueError(
            f"eval_batch_size {opts.eval_batch_size} is more than the {have} records of "
            f"{files}: evaluation reads whole batches only, so it would score none; "
            "lower eval_batch_size"
        )
    return steps


def _input_pipelines(strategy) -> int:
    """The input pipelines of a strategy: one per worker under MultiWorkerMirroredStrategy
    (tf.distribute), else one (Keras' JAX distribution splits one global pipeline)."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return 1
    cluster = strategy.cluster_resolver.cluster_spec().as_dict()
    return max(1, len(cluster.get("chief", [])) + len(cluster.get("worker", [])))


def eval_dataset_fn(opts, steps):
    """The evaluation `dataset_fn(per_replica_batch, input_context)` of a run: `steps` global
    batches of eval_input_file (else input_file)."""
    files = opts.eval_input_file or opts.input_file

    def dataset_fn(batch, ctx):
        # each pipeline feeds its replicas one batch per step
        per_pipeline = max(1, ctx.num_replicas_in_sync // ctx.num_input_pipelines)
        return pretraining_dataset(
            files,
            batch,
            opts.max_seq_length,
            opts.max_predictions_per_seq,
            is_training=False,
            input_context=ctx,
        ).take(steps * per_pipeline)

    return dataset_fn


def make_evaluate_fn(opts, strategy):
    """Google's eval: masked_lm_accuracy/loss and sentence_order_accuracy/loss on up to
    max_eval_steps batches (the records are counted once, here: `_eval_steps`)."""
    steps = _eval_steps(opts, strategy)

    def evaluate(model):
        ds = distribute.distribute_dataset(
            strategy, eval_dataset_fn(opts, steps), opts.eval_batch_size
        )
        # steps, never more than the dataset holds: its cardinality is unknown, and past its
        # end Keras ran one more step that counted a batch twice (a replica's half of it under
        # Mirrored, depending on timing).
        # every batch scored on a model compiled for training too (the engine does the same
        # around every evaluate_fn; this covers a direct call)
        with one_step_per_call(model):
            results = model.evaluate(ds, steps=steps, return_dict=True, verbose=0)
        return {k: v for k, v in results.items()}

    return evaluate


def pretrain(config: AlbertConfig, opts: PretrainingOptions, strategy=None) -> dict:
    """Pretrains ALBERT (`AlbertPretrainer`, MLM + SOP) and/or evaluates it.

    With `do_train`, trains to `opts.num_train_steps` updates, resuming from the newest
    checkpoint in output_dir if there is one (otherwise `init_checkpoint`, a Google TF1
    checkpoint or an albert_tf one, initialises the weights). With `do_eval` too, each saved
    checkpoint is evaluated and the best by `masked_lm_accuracy` is exported as
    output_dir/model.ckpt-best in Google's TF1 format. With `do_eval` alone, the newest
    checkpoint of output_dir (else `init_checkpoint`) is evaluated once and the results are
    appended to output_dir/eval_results.txt.

    Args:
        config: `AlbertConfig`. The model to pretrain.
        opts: `PretrainingOptions`. The run's settings.
        strategy: `tf.distribute.Strategy` or None. Default: the current strategy.

    Returns:
        dict: the last evaluation's metrics (`masked_lm_accuracy`, `masked_lm_loss`,
        `sentence_order_accuracy`, `sentence_order_loss`, `loss`, and `global_step` when
        training); when training without evaluation, only `global_step`.

    Raises:
        ValueError: when neither `do_train` nor `do_eval` is set, when
            `opts.max_seq_length` exceeds the config's `max_position_embeddings`, when
            evaluating and the evaluation records are fewer than `opts.eval_batch_size` (no
            whole batch to score), or when evaluating without training finds no checkpoint.
        OutputDirLockedError: when another live run holds `opts.output_dir`.

    Example:

    >>> import tempfile
    >>> import albert_tf
    >>> from albert_tf.pretraining.pretrain import PretrainingOptions, pretrain
    >>> config = albert_tf.AlbertConfig.from_json_file(
    ...     "tests/data/fixtures/albert_tiny/albert_config.json")
    >>> opts = PretrainingOptions(
    ...     input_file="tests/data/fixtures/pretraining.tfrecord",  # 32 records
    ...     output_dir=tempfile.mkdtemp(), max_seq_length=64, max_predictions_per_seq=10,
    ...     do_eval=True, train_batch_size=8, eval_batch_size=8, num_train_steps=2,
    ...     num_warmup_steps=1, save_checkpoints_steps=2, iterations_per_loop=1,
    ...     max_eval_steps=1, seed=1, verbose=0)
    >>> results = pretrain(config, opts)
    >>> results["global_step"], sorted(results)
    (2, ['global_step', 'loss', 'masked_lm_accuracy', 'masked_lm_loss',
         'sentence_order_accuracy', 'sentence_order_loss'])
    """
    strategy = strategy or tf.distribute.get_strategy()
    if not opts.do_train and not opts.do_eval:
        raise ValueError("at least one of do_train or do_eval must be True")
    if opts.max_seq_length > config.max_position_embeddings:
        raise ValueError(
            f"max_seq_length {opts.max_seq_length} exceeds max_position_embeddings "
            f"{config.max_position_embeddings} of the ALBERT config"
        )
    # the eval records are counted before any work: fewer than one batch is an error now
    evaluate = make_evaluate_fn(opts, strategy) if opts.do_eval else None
    with output_dir_lock(opts.output_dir, strategy):
        fileio.makedirs(opts.output_dir)
        summary = RunSummary(opts.output_dir, os.path.basename(sys.argv[0] or "albert_tf"))
        if opts.do_train:
            results = _train(config, opts, strategy, evaluate)
        else:
            results = _evaluate_checkpoint(config, opts, strategy, evaluate)
        _note_outputs(summary, config, opts, results)
        summary.finish(distribute.is_chief(strategy), show=opts.verbose != 0)
        return results


def _note_outputs(summary, config, opts, results):
    """The pretraining run's metrics and files in its closing summary."""
    summary.global_step = results.get("global_step")
    summary.metrics = {k: v for k, v in results.items() if k != "global_step"}
    summary.model = {"class": "AlbertPretrainer", "config": {"config": config.to_dict()}}
    best = fileio.join(opts.output_dir, BEST_CHECKPOINT)
    if fileio.exists(best + ".index"):
        summary.add(best, "best checkpoint by masked_lm_accuracy (Google's TF1 format)")
    if opts.do_eval:
        summary.add(fileio.join(opts.output_dir, RESULTS_FILE), "every evaluation")
    if opts.do_train:
        summary.add(opts.output_dir, f"TensorBoard: tensorboard --logdir {opts.output_dir}")


def _train(config, opts, strategy, evaluate) -> dict:
    """Pretrains to opts.num_train_steps (evaluating at save points with --do_eval); the last
    evaluation, else the global step."""
    run = RunConfig(
        output_dir=opts.output_dir,
        num_train_steps=opts.num_train_steps,
        save_checkpoints_steps=opts.save_checkpoints_steps,
        keep_checkpoint_max=opts.keep_checkpoint_max,
        iterations_per_loop=opts.iterations_per_loop,
        jit_compile=opts.jit_compile,
        best_metric="masked_lm_accuracy" if opts.do_eval else None,
        log_every_steps=opts.log_every_steps,
        gradient_accumulation_steps=opts.gradient_accumulation_steps,
        verbose=opts.verbose,
        seed=opts.seed,
    )
    train_fn = lambda batch, ctx: pretraining_dataset(
        opts.input_file,
        batch,
        opts.max_seq_length,
        opts.max_predictions_per_seq,
        is_training=True,
        input_context=ctx,
        seed=opts.seed,
    )
    init = opts.init_checkpoint
    result = training.train(
        _model_fn(config, opts),
        _optimizer_fn(opts),
        train_fn,
        global_batch_size=opts.train_batch_size,
        run=run,
        strategy=strategy,
        evaluate_fn=evaluate,
        init_checkpoint=init,
        init_kwargs={"group0_fallback": opts.init_from_group0},
    )
    if result.eval_history:
        return result.eval_history[-1]
    return {"global_step": result.global_step}


def _evaluate_checkpoint(config, opts, strategy, evaluate) -> dict:
    """--do_eval without --do_train: the metrics of the newest checkpoint of output_dir, else
    of init_checkpoint (appended to eval_results.txt)."""
    with strategy.scope():
        model = compile_for_inference(_model_fn(config, opts)(), strategy, opts.jit_compile)
    source = latest_checkpoint(opts.output_dir) or opts.init_checkpoint
    if not source:
        raise ValueError(
            "do_eval without do_train needs a checkpoint in output_dir or init_checkpoint"
        )
    init_from_checkpoint(model, source, group0_fallback=opts.init_from_group0)
    results = evaluate(model)
    if distribute.is_chief(strategy):
        append_results(opts.output_dir, results, title=f"eval of {fileio.basename(source)}")
    logging.info("eval of %s: %s", source, format_metrics(results))
    return results
