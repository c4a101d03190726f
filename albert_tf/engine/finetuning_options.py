"""FineTuningOptions: the settings every fine-tuning driver shares (Google's flag names), kept
apart from the engine so the drivers' flags are defined without importing TensorFlow."""

from __future__ import annotations

import dataclasses
from typing import Optional


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
    bucket_by_length: bool = True
    padding_free: bool = True
    tpu_buckets: bool = False  # the few buckets of bucketing.tpu_bucket_lengths (one compile each)
