"""Argument checks shared by the learning-rate schedule and the optimizers, so a bad value
fails at construction with a ValueError that names the argument."""

import numbers
import re


def check_number(name, value, low=None, high=None, low_open=False, high_open=False, integer=False):
    """Return `value` if it is a number in the given range, else raise ValueError naming `name`."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise ValueError(
            f"`{name}` must be {'an integer' if integer else 'a number'}, got {value!r}"
        )
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        lo = "" if low is None else f"{'(' if low_open else '['}{low}, "
        hi = "inf)" if high is None else f"{high}{')' if high_open else ']'}"
        raise ValueError(f"`{name}` must be in {lo or '(-inf, '}{hi}, got {value!r}")
    return value


def check_patterns(name, patterns):
    """Return `patterns` as a list of regex strings (None means none), raising on bad entries."""
    if patterns is None:
        return []
    if isinstance(patterns, str):
        raise ValueError(
            f"`{name}` must be a list of regex strings, not a single string "
            f"({patterns!r}); wrap it in a list"
        )
    patterns = list(patterns)
    for p in patterns:
        if not isinstance(p, str):
            raise ValueError(f"`{name}` entries must be strings, got {p!r}")
        try:
            re.compile(p)
        except re.error as err:
            raise ValueError(f"`{name}` entry {p!r} is not a valid regex: {err}") from None
    return patterns
