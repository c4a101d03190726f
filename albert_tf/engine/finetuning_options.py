"""FineTuningOptions: the settings every fine-tuning driver shares (Google's flag names), kept
apart from the engine so the drivers' flags are defined without importing TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Optional


@dataclasses.dataclass
class FineTuningOptions:
    """The settings every fine-tuning driver shares, with the names of Google's flags.

    `albert_tf.drivers.flags.options_from_flags` builds one from the drivers' flags;
    `run_finetuning` takes one.

    Args:
        output_dir: str. Where checkpoints, results, predictions and exports go (local or
            `gs://`). Required.
        init_checkpoint: str or None. The pretrained checkpoint to start from (a Google TF1
            checkpoint or an albert_tf one). None: random weights (a warning is logged).
        train_batch_size: int. The global training batch. Default 32.
        eval_batch_size: int. The evaluation batch. Default 8.
        predict_batch_size: int. The prediction batch. Default 8.
        learning_rate: float. The peak learning rate. Default 5e-5.
        train_step: int. The number of optimizer updates. Default 1000.
        warmup_step: int. The number of linear warmup updates. Default 0.
        save_checkpoints_steps: int. Updates between checkpoints (each one evaluated when the
            run evaluates). Default 1000.
        keep_checkpoint_max: int. The number of recent checkpoints kept. Default 5.
        optimizer: str. "adamw" (default) or "lamb".
        iterations_per_loop: int. Steps per compiled call (Keras `steps_per_execution`).
            Default 1.
        jit_compile: bool or None. Compile the train step with XLA; None: on for TPU only.
        gradient_accumulation_steps: int. Micro-batches per update. Default 1.
        log_every_steps: int. Steps between progress lines (when stderr is no terminal) and
            TensorBoard points. Default 100.
        seed: int or None. The seed of the training-data shuffle and of Keras (weights,
            dropout). Default 12345.
        verbose: Keras `fit` verbosity: "auto" (default), 0, 1 or 2; 0 also leaves out the
            closing summary (run_summary.json is still written).
        bucket_by_length: bool. Cut each batch to the smallest bucket length that holds its
            records (see `albert_tf.bucket_lengths`); results are the same. Default True.
        padding_free: bool. Run the encoder's row-wise work on real tokens only (not under
            XLA). Default True.
        tpu_buckets: bool. Use the few TPU buckets (`bucketing.tpu_bucket_lengths`, one
            compile each) instead of the fine ones. Default False.
    """

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
    bucket_by_length: bool = True
    padding_free: bool = True
    tpu_buckets: bool = False  # the few buckets of bucketing.tpu_bucket_lengths (one compile each)
