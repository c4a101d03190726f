"""The task protocol: what a fine-tuning task gives the engine, so the engine never imports a task.

A task (GLUE, SQuAD, RACE, or a new folder under albert_tf/tasks/) is any object with these
members; `run_finetuning(task, model_fn, opts)` then trains, evaluates, predicts and exports it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class FineTuningTask(Protocol):
    """The members `albert_tf.engine.finetuning.run_finetuning` uses, and nothing else."""

    spec: dict  # training record features: name -> (kind "int64" | "float", length)
    best_metric: str  # the evaluate() key that picks model.ckpt-best (higher is better)

    def records(self, split: str) -> tuple:
        """(path, count) of the cached TFRecords of a split ("train", "dev", "test")."""

    def evaluate(self, model, batch_size: int) -> dict:
        """Dev metrics of `model` (exact, on real examples only)."""

    def write_predictions(self, model, output_dir: str, batch_size: int) -> list:
        """Write the test-set prediction files into output_dir; return their paths."""


def check_task(task) -> None:
    """A TypeError naming the members a would-be task lacks."""
    missing = [
        m
        for m in ("spec", "best_metric", "records", "evaluate", "write_predictions")
        if not hasattr(task, m)
    ]
    if missing:
        raise TypeError(
            f"{type(task).__name__} is not a FineTuningTask: it lacks {missing} "
            "(see albert_tf/engine/task_protocol.py)"
        )
