"""Exact evaluation metrics shared by the tasks, in NumPy (no sklearn/scipy at run time).

All functions take array-likes of equal, non-zero length and return Python floats.
They agree with scikit-learn / scipy (float64 arithmetic); on degenerate input where
those libraries return NaN or warn (a constant prediction for Matthews / Pearson /
Spearman, no positives for F1) these return 0.0, so best-checkpoint comparisons never
see NaN.
"""

from __future__ import annotations

from typing import Dict

import numpy as np


def _pair(predictions, labels, dtype=None):
    """Predictions and labels as 1-D arrays of the same non-zero length."""
    p = np.asarray(predictions, dtype=dtype).reshape(-1)
    y = np.asarray(labels, dtype=dtype).reshape(-1)
    if p.shape != y.shape:
        raise ValueError(f"{p.size} predictions but {y.size} labels")
    if p.size == 0:
        raise ValueError("metrics need at least one example")
    return p, y


def accuracy(predictions, labels) -> float:
    """The fraction of predictions equal to their label.

    Args:
        predictions: array-like. The predictions, any shape (flattened).
        labels: array-like. The labels, as many as the predictions.

    Returns:
        float. The accuracy, in [0, 1].

    Raises:
        ValueError: when the lengths differ or are zero.

    Example:

    >>> from albert_tf.tasks.metrics import accuracy
    >>> accuracy([1, 0, 1, 1], [1, 1, 1, 0])
    0.5
    """
    p, y = _pair(predictions, labels)
    return float(np.mean(p == y))


def matthews_corrcoef(predictions, labels) -> float:
    """The Matthews correlation coefficient (CoLA's metric).

    The multiclass R_K form, which equals the binary MCC on two classes; 0.0 where it is
    undefined (a constant prediction or a constant label).

    Args:
        predictions: array-like. The predictions, any shape (flattened).
        labels: array-like. The labels, as many as the predictions.

    Returns:
        float. The coefficient, in [-1, 1].

    Raises:
        ValueError: when the lengths differ or are zero.

    Example:

    >>> from albert_tf.tasks.metrics import matthews_corrcoef
    >>> round(matthews_corrcoef([1, 0, 1, 0], [1, 0, 0, 0]), 3)
    0.577
    """
    p, y = _pair(predictions, labels)
    _, codes = np.unique(np.concatenate([y, p]), return_inverse=True)
    y_codes, p_codes = codes[: y.size], codes[y.size :]
    k = int(codes.max()) + 1
    t = np.bincount(y_codes, minlength=k).astype(np.float64)  # true counts per class
    q = np.bincount(p_codes, minlength=k).astype(np.float64)  # predicted counts
    n = float(y.size)
    correct = float(np.sum(y_codes == p_codes))
    cov_yp = correct * n - float(t @ q)
    cov_pp = n * n - float(q @ q)
    cov_yy = n * n - float(t @ t)
    if cov_pp == 0.0 or cov_yy == 0.0:
        return 0.0
    return float(cov_yp / np.sqrt(cov_pp * cov_yy))


def f1(predictions, labels, positive_label=1) -> float:
    """The binary F1 score of one class (MRPC's and QQP's second metric).

    Args:
        predictions: array-like. The predictions, any shape (flattened).
        labels: array-like. The labels, as many as the predictions.
        positive_label: The class scored as positive. Default 1.

    Returns:
        float. The F1, in [0, 1]; 0.0 when there are no true or predicted positives.

    Raises:
        ValueError: when the lengths differ or are zero.

    Example:

    >>> from albert_tf.tasks.metrics import f1
    >>> round(f1([1, 0, 1, 1], [1, 1, 1, 0]), 3)
    0.667
    """
    p, y = _pair(predictions, labels)
    tp = float(np.sum((p == positive_label) & (y == positive_label)))
    fp = float(np.sum((p == positive_label) & (y != positive_label)))
    fn = float(np.sum((p != positive_label) & (y == positive_label)))
    denominator = 2.0 * tp + fp + fn
    return 0.0 if denominator == 0.0 else 2.0 * tp / denominator


def pearson(predictions, labels) -> float:
    """The Pearson correlation coefficient (STS-B's metric), in float64.

    Args:
        predictions: array-like. The predictions, any shape (flattened).
        labels: array-like. The labels, as many as the predictions.

    Returns:
        float. The coefficient, in [-1, 1]; 0.0 when either side is constant.

    Raises:
        ValueError: when the lengths differ or are zero.

    Example:

    >>> from albert_tf.tasks.metrics import pearson
    >>> round(pearson([1.0, 2.0, 3.0], [2.0, 4.0, 7.0]), 3)
    0.993
    """
    x, y = _pair(predictions, labels, dtype=np.float64)
    xc, yc = x - x.mean(), y - y.mean()
    sxx, syy = float(xc @ xc), float(yc @ yc)
    if sxx == 0.0 or syy == 0.0:
        return 0.0
    r = float(xc @ yc) / np.sqrt(sxx) / np.sqrt(syy)
    return float(np.clip(r, -1.0, 1.0))


def rankdata(values) -> np.ndarray:
    """The 1-based ranks of values; ties get the average of the ranks they span.

    As `scipy.stats.rankdata(values, method="average")`.

    Args:
        values: array-like. The values, any shape (flattened).

    Returns:
        np.ndarray. The float64 rank of each value.

    Example:

    >>> from albert_tf.tasks.metrics import rankdata
    >>> rankdata([10, 30, 20, 20]).tolist()
    [1.0, 4.0, 2.5, 2.5]
    """
    v = np.asarray(values).reshape(-1)
    order = np.argsort(v, kind="mergesort")
    sorted_v = v[order]
    # start index of each run of equal values in sorted order
    new_run = np.concatenate([[True], sorted_v[1:] != sorted_v[:-1]])
    run_id = np.cumsum(new_run) - 1
    starts = np.flatnonzero(new_run)
    ends = np.concatenate([starts[1:], [v.size]])
    average_rank = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(v.size, dtype=np.float64)
    ranks[order] = average_rank[run_id]
    return ranks


def spearman(predictions, labels) -> float:
    """The Spearman rank correlation (STS-B's second metric).

    The Pearson correlation of the average ranks (`rankdata`).

    Args:
        predictions: array-like. The predictions, any shape (flattened).
        labels: array-like. The labels, as many as the predictions.

    Returns:
        float. The coefficient, in [-1, 1]; 0.0 when either side is constant.

    Raises:
        ValueError: when the lengths differ or are zero.

    Example:

    >>> from albert_tf.tasks.metrics import spearman
    >>> round(spearman([1.0, 2.0, 3.0], [2.0, 4.0, 7.0]), 3)
    1.0
    """
    x, y = _pair(predictions, labels, dtype=np.float64)
    return pearson(rankdata(x), rankdata(y))


def mean_squared_error(predictions, labels) -> float:
    """The mean of the squared differences, in float64.

    Args:
        predictions: array-like. The predictions, any shape (flattened).
        labels: array-like. The labels, as many as the predictions.

    Returns:
        float. The mean squared error.

    Raises:
        ValueError: when the lengths differ or are zero.

    Example:

    >>> from albert_tf.tasks.metrics import mean_squared_error
    >>> mean_squared_error([1.0, 2.0], [1.0, 4.0])
    2.0
    """
    x, y = _pair(predictions, labels, dtype=np.float64)
    return float(np.mean((x - y) ** 2))


def multilabel_scores(probabilities, targets, threshold: float = 0.5) -> Dict[str, float]:
    """Scores multi-label predictions: micro F1, macro F1 and exact match.

    A label is predicted where its probability is >= `threshold`.

    Args:
        probabilities: array-like. [n, labels] sigmoid outputs.
        targets: array-like. [n, labels] 0/1 (or bool) gold labels.
        threshold: float. The probability at which a label is predicted. Default 0.5.

    Returns:
        dict. "micro_f1" (true / false positive and negative counts pooled over labels),
        "macro_f1" (the mean of every label's F1, 0 for a label neither true nor
        predicted) and "exact_match" (the fraction of rows whose whole label set is right).

    Raises:
        ValueError: when the shapes differ, are not 2-D, or are empty.

    Example:

    >>> from albert_tf.tasks.metrics import multilabel_scores
    >>> multilabel_scores([[0.9, 0.2], [0.6, 0.7]], [[1, 0], [0, 1]])
    {'micro_f1': 0.8, 'macro_f1': 0.8333333333333333, 'exact_match': 0.5}
    """
    p = np.asarray(probabilities, np.float64) >= threshold
    y = np.asarray(targets).astype(bool)
    if p.shape != y.shape or p.ndim != 2 or p.size == 0:
        raise ValueError(f"probabilities {p.shape} and targets {y.shape}: need equal [n, labels]")
    tp, fp, fn = (p & y).sum(0), (p & ~y).sum(0), (~p & y).sum(0)
    den = 2 * tp + fp + fn
    per_label = np.where(den > 0, 2 * tp / np.maximum(den, 1), 0.0)
    micro = 2 * tp.sum() / max(2 * tp.sum() + fp.sum() + fn.sum(), 1)
    return {
        "micro_f1": float(micro),
        "macro_f1": float(per_label.mean()),
        "exact_match": float(np.mean(np.all(p == y, axis=1))),
    }


THRESHOLDS = tuple(round(0.05 * k, 2) for k in range(1, 20))  # 0.05 ... 0.95


def best_threshold(probabilities, targets, candidates=THRESHOLDS) -> float:
    """Chooses the multi-label threshold with the highest micro F1.

    Chosen on dev, then used for the test predictions and the export.

    Args:
        probabilities: array-like. [n, labels] sigmoid outputs.
        targets: array-like. [n, labels] 0/1 gold labels.
        candidates: sequence of float. The thresholds to try. Default 0.05, 0.10, ..., 0.95.

    Returns:
        float. The candidate with the highest micro F1; the one nearest 0.5 on ties.

    Example:

    >>> from albert_tf.tasks.metrics import best_threshold
    >>> best_threshold([[0.9, 0.3], [0.35, 0.7]], [[1, 1], [0, 1]])
    0.3
    """
    scored = [
        (multilabel_scores(probabilities, targets, t)["micro_f1"], -abs(t - 0.5), t)
        for t in candidates
    ]
    return max(scored)[2]
