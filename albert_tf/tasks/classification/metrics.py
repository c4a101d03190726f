"""The dev metrics of a text classifier on your own data, by its label count (regression,
two classes, more), exact, in NumPy."""

from __future__ import annotations

from typing import Dict

from albert_tf.tasks.metrics import (
    accuracy,
    f1,
    matthews_corrcoef,
    mean_squared_error,
    pearson,
    spearman,
)


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
