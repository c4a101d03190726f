"""Pretraining ALBERT with MLM + SOP on Google's TFRecords, through the shared engine."""

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
from albert_tf.engine.save_points import BEST_CHECKPOINT
from albert_tf.modeling.albert_model import AlbertPretrainer
from albert_tf.pretraining.input import pretraining_dataset


@dataclasses.dataclass
class PretrainingOptions:
    """run_pretraining.py's flags, with Google's defaults."""

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


def eval_dataset_fn(opts):
    files = opts.eval_input_file or opts.input_file

    def dataset_fn(batch, ctx):
        # max_eval_steps global steps: each pipeline feeds its replicas one batch per step.
        per_pipeline = max(1, ctx.num_replicas_in_sync // ctx.num_input_pipelines)
        return pretraining_dataset(
            files,
            batch,
            opts.max_seq_length,
            opts.max_predictions_per_seq,
            is_training=False,
            input_context=ctx,
        ).take(opts.max_eval_steps * per_pipeline)

    return dataset_fn


def make_evaluate_fn(opts, strategy):
    """Google's eval: masked_lm_accuracy/loss and sentence_order_accuracy/loss on up to
    max_eval_steps batches."""

    def evaluate(model):
        ds = distribute.distribute_dataset(strategy, eval_dataset_fn(opts), opts.eval_batch_size)
        # steps: the dataset's cardinality is unknown, and without steps Keras runs one step
        # past its end that counts a batch twice (a replica's half of it under Mirrored,
        # depending on timing).
        # every batch scored on a model compiled for training too (the engine does the same
        # around every evaluate_fn; this covers a direct call)
        with one_step_per_call(model):
            results = model.evaluate(ds, steps=opts.max_eval_steps, return_dict=True, verbose=0)
        return {k: v for k, v in results.items()}

    return evaluate


def pretrain(config: AlbertConfig, opts: PretrainingOptions, strategy=None) -> dict:
    """Train (do_train) and/or evaluate (do_eval) ALBERT; returns the last eval results.

    Resumes from the newest checkpoint in output_dir; otherwise init_checkpoint (a Google TF1
    checkpoint or one of ours) initialises the weights. The best checkpoint by
    masked_lm_accuracy is exported to output_dir/model.ckpt-best in Google's format.
    """
    strategy = strategy or tf.distribute.get_strategy()
    if not opts.do_train and not opts.do_eval:
        raise ValueError("at least one of --do_train or --do_eval must be True")
    if opts.max_seq_length > config.max_position_embeddings:
        raise ValueError(
            f"--max_seq_length {opts.max_seq_length} exceeds max_position_embeddings "
            f"{config.max_position_embeddings} of the ALBERT config"
        )
    with output_dir_lock(opts.output_dir, strategy):
        fileio.makedirs(opts.output_dir)
        summary = RunSummary(opts.output_dir, os.path.basename(sys.argv[0] or "albert_tf"))
        if opts.do_train:
            results = _train(config, opts, strategy)
        else:
            results = _evaluate_checkpoint(config, opts, strategy)
        _note_outputs(summary, config, opts, results)
        summary.finish(distribute.is_chief(strategy))
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


def _train(config, opts, strategy) -> dict:
    """Pretrains to opts.num_train_steps (evaluating at save points with --do_eval); the last
    evaluation, else the global step."""
    evaluate = make_evaluate_fn(opts, strategy) if opts.do_eval else None
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


def _evaluate_checkpoint(config, opts, strategy) -> dict:
    """--do_eval without --do_train: the metrics of the newest checkpoint of output_dir, else
    of init_checkpoint (appended to eval_results.txt)."""
    evaluate = make_evaluate_fn(opts, strategy)
    with strategy.scope():
        model = compile_for_inference(_model_fn(config, opts)(), strategy, opts.jit_compile)
    source = tf.train.latest_checkpoint(opts.output_dir) or opts.init_checkpoint
    if not source:
        raise ValueError(
            "--do_eval without --do_train needs a checkpoint in --output_dir or --init_checkpoint"
        )
    init_from_checkpoint(model, source, group0_fallback=opts.init_from_group0)
    results = evaluate(model)
    if distribute.is_chief(strategy):
        append_results(opts.output_dir, results, title=f"eval of {fileio.basename(source)}")
    logging.info("eval of %s: %s", source, format_metrics(results))
    return results
