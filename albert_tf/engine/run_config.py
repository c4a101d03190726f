"""How long a run trains and when it saves and evaluates (Google's flag names), checked when
built so a bad flag fails before any model is made."""

from __future__ import annotations

import dataclasses
from typing import Optional


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
        for name in (
            "num_train_steps",
            "save_checkpoints_steps",
            "iterations_per_loop",
            "gradient_accumulation_steps",
            "log_every_steps",
        ):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.keep_checkpoint_max < 1:
            raise ValueError(f"keep_checkpoint_max must be >= 1, got {self.keep_checkpoint_max}")
        if self.best_mode not in ("max", "min"):
            raise ValueError(f"best_mode must be 'max' or 'min', got {self.best_mode!r}")
