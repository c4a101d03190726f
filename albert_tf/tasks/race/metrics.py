"""RACE accuracy overall and per level (middle / high school), which Google's code lacked."""

from __future__ import annotations

from typing import Dict, Optional, Sequence

import numpy as np

from albert_tf.tasks.metrics import accuracy

RACE_LEVELS = ("middle", "high")


def race_metrics(predictions, labels, levels: Optional[Sequence[str]] = None) -> Dict[str, float]:
    """RACE accuracy overall, plus ``middle_accuracy`` / ``high_accuracy`` when levels given.

    ``levels`` holds "middle" or "high" per question; a level with no questions is
    left out of the result.
    """
    p, y = np.asarray(predictions).reshape(-1), np.asarray(labels).reshape(-1)
    result = {"accuracy": accuracy(p, y)}
    if levels is None:
        return result
    lv = np.asarray(levels).reshape(-1)
    if lv.shape != p.shape:
        raise ValueError(f"{lv.size} levels but {p.size} predictions")
    unknown = set(lv.tolist()) - set(RACE_LEVELS)
    if unknown:
        raise ValueError(f"unknown RACE levels {sorted(unknown)}; expected {RACE_LEVELS}")
    for level in RACE_LEVELS:
        mask = lv == level
        if mask.any():
            result[f"{level}_accuracy"] = accuracy(p[mask], y[mask])
    return result


def race_accuracy(predictions, labels) -> float:
    """Fraction of RACE questions answered correctly."""
    return accuracy(predictions, labels)
