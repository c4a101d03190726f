"""Library messages in the command line's words: the library names its arguments
(`input_path`, `model_kind`), a command reports them as the flags its user typed."""

from __future__ import annotations

import re


def in_flag_words(message, flag_names: dict) -> str:
    """A library message with its argument names said as the command line's flags.

    The library raises errors in its arguments' names (`input_path`, `model_kind`); a command
    reports them in the words its user typed.

    Args:
        message: The library's message (an exception or a string).
        flag_names: Argument name -> flag, e.g. `{"input_path": "--input"}`.

    Returns:
        The message with each argument name, standing alone, replaced by its flag.

    Example:

    >>> flags = {"input_path": "--input", "albert_config_file": "--albert_config_file"}
    >>> in_flag_words("input_path x: no config; pass albert_config_file", flags)
    '--input x: no config; pass --albert_config_file'
    """
    names = sorted(flag_names, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w])")
    return pattern.sub(lambda m: flag_names[m.group(1)], str(message))
