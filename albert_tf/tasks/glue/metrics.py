"""GLUE's dev metrics per task (Google's, plus the F1 and Spearman it lacked), exact, in NumPy."""

from __future__ import annotations

from typing import Dict

from albert_tf.tasks.glue.processors import canonical_task_name
from albert_tf.tasks.metrics import (
    accuracy,
    f1,
    matthews_corrcoef,
    mean_squared_error,
    pearson,
    spearman,
)


def glue_metrics(task_name: str, predictions, labels) -> Dict[str, float]:
    """Dev metrics for a GLUE task, keyed by metric name.

    ``predictions``/``labels`` are label ids (floats for STS-B). Every classification
    task gets ``accuracy``; CoLA and AX add ``matthews_corrcoef``; MRPC and QQP add
    ``f1`` (label 1 positive); STS-B gives ``pearson``, ``spearman`` and ``mse``.
    """
    task = canonical_task_name(task_name)
    if task == "sts-b":
        return {
            "pearson": pearson(predictions, labels),
            "spearman": spearman(predictions, labels),
            "mse": mean_squared_error(predictions, labels),
        }
    result = {"accuracy": accuracy(predictions, labels)}
    if task in ("cola", "ax"):
        result["matthews_corrcoef"] = matthews_corrcoef(predictions, labels)
    if task in ("mrpc", "qqp"):
        result["f1"] = f1(predictions, labels)
    return result


def custom_metrics(predictions, labels, num_labels: int, is_regression: bool) -> Dict[str, float]:
    """Dev metrics of a custom task: ``pearson``, ``spearman``, ``mse`` for regression; else
    ``accuracy`` and ``matthews_corrcoef``, plus ``f1`` of label id 1 (the second sorted label)
    for two classes or ``macro_f1`` (the mean of every class's F1) for more."""
    if is_regression:
        return {
            "pearson": pearson(predictions, labels),
            "spearman": spearman(predictions, labels),
            "mse": mean_squared_error(predictions, labels),
        }
    result = {
        "accuracy": accuracy(predictions, labels),
        "matthews_corrcoef": matthews_corrcoef(predictions, labels),
    }
    if num_labels == 2:
        result["f1"] = f1(predictions, labels)
    elif num_labels > 2:
        result["macro_f1"] = sum(f1(predictions, labels, c) for c in range(num_labels)) / num_labels
    return result
