"""Warmup that fits the run: a default or recipe warmup longer than a short run keeps its share
of the run instead of failing it, while a warmup the user gave must fit."""

from __future__ import annotations

from absl import logging

from albert_tf.core.errors import InputError


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


def fit_warmup_to_run(FLAGS):
    """A default --warmup_step longer than the run is scaled down to keep its share of the
    run (one log line says so); a --warmup_step the user gave explicitly must fit.

    Args:
        FLAGS: The parsed flags (warmup_step and train_step are read, warmup_step may be set).

    Raises:
        InputError: An explicit --warmup_step exceeds --train_step.
    """
    warmup, train = FLAGS.warmup_step, FLAGS.train_step
    if train is None or warmup is None or warmup <= train:
        return
    if FLAGS["warmup_step"].present:
        raise InputError(f"--warmup_step={warmup} exceeds --train_step={train}")
    paired = FLAGS["train_step"].default or train
    FLAGS.warmup_step = scaled_warmup(warmup, paired, train)
    logging.info(
        "--warmup_step: the default %d exceeds --train_step=%d; using %d (the same share of "
        "the run; give --warmup_step to choose)",
        warmup,
        train,
        FLAGS.warmup_step,
    )
