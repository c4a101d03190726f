"""Google's eval_results.txt (`key = value` lines, one block per evaluation, appended, each block
under a `***** title *****` line saying which checkpoint it scored), and the one-line form of a
set of metrics the drivers print."""

from __future__ import annotations

import numbers
from typing import Optional

from albert_tf.core import fileio

RESULTS_FILE = "eval_results.txt"


def format_value(value) -> str:
    """One number format for every block: integers as integers, floats in full (repr).

    Args:
        value: A metric value (int, float, NumPy scalar, or anything else).

    Returns:
        Its text in eval_results.txt.

    Example:

    >>> format_value(30), format_value(30.0), format_value(0.25), format_value("ckpt-10")
    ('30', '30.0', '0.25', 'ckpt-10')
    """
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    return str(value)


def format_results(results: dict, title: Optional[str] = None) -> str:
    """One block of eval_results.txt: an optional `***** title *****` line, then a sorted
    `key = value` line per metric (Google's layout).

    Args:
        results: Metric name -> value.
        title: What was evaluated, e.g. "eval of ckpt-10 (step 10)".

    Returns:
        The block's text, ending in a newline.

    Example:

    >>> print(format_results({"loss": 0.5, "accuracy": 0.75}, "eval at step 10"), end="")
    ***** eval at step 10 *****
    accuracy = 0.75
    loss = 0.5
    """
    head = f"***** {title} *****\n" if title else ""
    return head + "".join(f"{k} = {format_value(results[k])}\n" for k in sorted(results))


def format_metrics(results: dict, skip=("global_step",)) -> str:
    """Metrics on one console line: `accuracy 0.7500 · loss 0.5000`.

    Args:
        results: Metric name -> value.
        skip: Names left out.

    Returns:
        The line.

    Example:

    >>> format_metrics({"loss": 0.5, "accuracy": 0.75, "entities": 30, "global_step": 10})
    'accuracy 0.7500 · entities 30 · loss 0.5000'
    """
    parts = []
    for key in sorted(k for k in results if k not in skip):
        value = results[key]
        is_float = isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)
        parts.append(f"{key} {value:.4f}" if is_float else f"{key} {format_value(value)}")
    return " · ".join(parts)


def append_results(output_dir: str, results: dict, *, title: Optional[str] = None):
    """Adds one block to output_dir/eval_results.txt, atomically (a kill never leaves half a
    block).

    Args:
        output_dir: The run's folder (any filesystem albert_tf.core.fileio reads).
        results: Metric name -> value.
        title: What the block scored (see `format_results`).
    """
    path = fileio.join(output_dir, RESULTS_FILE)
    old = fileio.read_text(path) if fileio.exists(path) else ""
    fileio.write_text(path, old + format_results(results, title) + "\n")
