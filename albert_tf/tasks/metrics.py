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
    """Fraction of predictions equal to their label."""
    p, y = _pair(predictions, labels)
    return float(np.mean(p == y))


def matthews_corrcoef(predictions, labels) -> float:
    """Matthews correlation (multiclass R_K form, equals the binary MCC); 0 if undefined."""
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
    """Binary F1 of ``positive_label`` (default 1); 0 when there are no true/predicted positives."""
    p, y = _pair(predictions, labels)
    tp = float(np.sum((p == positive_label) & (y == positive_label)))
    fp = float(np.sum((p == positive_label) & (y != positive_label)))
    fn = float(np.sum((p != positive_label) & (y == positive_label)))
    denominator = 2.0 * tp + fp + fn
    return 0.0 if denominator == 0.0 else 2.0 * tp / denominator


def pearson(predictions, labels) -> float:
    """Pearson correlation coefficient; 0 when either side is constant."""
    x, y = _pair(predictions, labels, dtype=np.float64)
    xc, yc = x - x.mean(), y - y.mean()
    sxx, syy = float(xc @ xc), float(yc @ yc)
    if sxx == 0.0 or syy == 0.0:
        return 0.0
    r = float(xc @ yc) / np.sqrt(sxx) / np.sqrt(syy)
    return float(np.clip(r, -1.0, 1.0))


def rankdata(values) -> np.ndarray:
    """1-based ranks, ties given the average of the ranks they span (scipy 'average')."""
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
    """Spearman rank correlation (Pearson of average ranks); 0 when a side is constant."""
    x, y = _pair(predictions, labels, dtype=np.float64)
    return pearson(rankdata(x), rankdata(y))


def mean_squared_error(predictions, labels) -> float:
    """Mean of squared differences."""
    x, y = _pair(predictions, labels, dtype=np.float64)
    return float(np.mean((x - y) ** 2))


def multilabel_scores(probabilities, targets, threshold: float = 0.5) -> Dict[str, float]:
    """Multi-label scores of sigmoid outputs [n, labels] against 0/1 targets at `threshold`:
    ``micro_f1`` (counts pooled over labels), ``macro_f1`` (the mean of every label's F1, 0 for
    a label never true nor predicted), ``exact_match`` (rows whose whole label set is right).

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
    """The threshold of `candidates` with the highest micro F1 (the one nearest 0.5 on ties),
    chosen on dev and then used for test predictions."""
    scored = [
        (multilabel_scores(probabilities, targets, t)["micro_f1"], -abs(t - 0.5), t)
        for t in candidates
    ]
    return max(scored)[2]
