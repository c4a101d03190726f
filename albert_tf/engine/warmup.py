"""Warmup that fits the run: a default or recipe warmup longer than a short run keeps its share
of the run instead of failing it (the drivers' flag side is albert_tf.drivers.recipes)."""

from __future__ import annotations


def scaled_warmup(warmup: int, paired_train_step: int, train_step: int) -> int:
    """A warmup that keeps its share of a run shortened to `train_step` steps.

    Args:
        warmup: The warmup that came with a run of `paired_train_step` steps.
        paired_train_step: The run length the warmup was meant for.
        train_step: The run's actual length.

    Returns:
        The warmup for `train_step` steps, below it.

    Example:

    >>> scaled_warmup(100, 1000, 20), scaled_warmup(200, 800, 5)
    (2, 1)
    """
    share = warmup / paired_train_step if paired_train_step else 0.1
    return min(max(0, int(round(train_step * share))), max(0, train_step - 1))
