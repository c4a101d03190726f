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
