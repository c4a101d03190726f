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
        The message with each argument name, standing alone, replaced by its flag (not a
        part of a path `runs/output_dir/x`, a value `=name`, a flag already `--name` or a file
        name `output_dir.txt`); names joined by `/` are each replaced (`use_tpu/strategy_type`).

    Example:

    >>> flags = {"input_path": "--input", "albert_config_file": "--albert_config_file"}
    >>> in_flag_words("input_path x: no config; pass albert_config_file", flags)
    '--input x: no config; pass --albert_config_file'
    >>> in_flag_words("output_dir /runs/output_dir/a is in use", {"output_dir": "--output_dir"})
    '--output_dir /runs/output_dir/a is in use'
    >>> in_flag_words("train_file.csv: bad; check train_file.", {"train_file": "--train_file"})
    'train_file.csv: bad; check --train_file.'
    """
    if not flag_names:
        return str(message)
    name = "(?:" + "|".join(map(re.escape, sorted(flag_names, key=len, reverse=True))) + ")"
    pattern = re.compile(rf"(?<![\w\-./=\\]){name}(?:/{name})*(?![\w/\\]|\.\w)")
    return pattern.sub(
        lambda m: "/".join(flag_names[part] for part in m.group(0).split("/")), str(message)
    )


def command_flag_names(flag_values) -> dict:
    """Argument name -> flag for a command's own flags whose names hold an underscore.

    The library names its arguments as Google's flags are named (`output_dir`,
    `init_checkpoint`), so a command's flag names are the words to translate; absl's own
    flags, and one-word names that are ordinary words too (`seed`, `optimizer`), are left out.

    Args:
        flag_values: absl.flags.FlagValues. The command's parsed flags.

    Returns:
        dict. E.g. `{"output_dir": "--output_dir", ...}`.

    Example:

    >>> from absl import flags
    >>> fv = flags.FlagValues()
    >>> _ = flags.DEFINE_string("output_dir", None, "out", flag_values=fv)
    >>> _ = flags.DEFINE_integer("seed", 0, "seed", flag_values=fv)
    >>> command_flag_names(fv)
    {'output_dir': '--output_dir'}
    """
    return {
        flag.name: f"--{flag.name}"
        for module, defined in flag_values.flags_by_module_dict().items()
        if not module.startswith("absl.")
        for flag in defined
        if "_" in flag.name
    }
