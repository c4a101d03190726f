"""Helpers shared by the keras-hub and Hugging Face formats.

They rename Google's variable names by rules, reshape tensors between layouts, describe what an
export wrote (`ExportReport`); `release_folder` finds the files a model folder holds.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from albert_tf.core import fileio
from albert_tf.text.vocab_files import read_spm_model


@dataclasses.dataclass
class ExportReport:
    """What an export wrote, and what the target format had no place for.

    Returned by `export_keras_hub_preset` and `export_huggingface`. `str(report)` gives a
    one-line summary followed by one line per variable left out.

    Args:
        path: str. The folder written.
        written: list of str. Google names of the variables written.
        left_out: list of str. Google names of the variables the format cannot hold (for
            example the sentence-order head in a keras-hub preset, or a SQuAD v2 head in a
            Hugging Face folder).
    """

    path: str
    written: list
    left_out: list

    def __str__(self):
        lines = [f"wrote {self.path}: {len(self.written)} variables, {len(self.left_out)} left out"]
        lines += [f"  left out (no place in this format): {n}" for n in self.left_out]
        return "\n".join(lines)


def rename(name: str, rules) -> str | None:
    r"""Rename a variable by the first rule whose pattern matches the whole name.

    Args:
        name: str. The name to rename.
        rules: sequence of `(pattern, template)` pairs: a regular expression and a
            `re.Match.expand` template.

    Returns:
        str or None. The expanded template of the first full match, or None when no rule
        matches.

    Example:

    >>> from albert_tf.formats.common import rename
    >>> rename("group_3/kernel", [(r"group_(\d+)/(kernel|bias)", r"layer\1.\2")])
    'layer3.kernel'
    """
    for pattern, template in rules:
        m = re.fullmatch(pattern, name)
        if m:
            return m.expand(template)
    return None


def reshape_checked(value, shape, what):
    """Reshape an array, naming the tensor when the sizes differ.

    Args:
        value: array-like. The tensor to reshape.
        shape: sequence of int. The target shape; it must hold as many elements as `value`.
        what: str. The tensor's name, for the error message.

    Returns:
        `np.ndarray` of shape `shape`.

    Raises:
        ValueError: when `value` and `shape` have different element counts.
    """
    value = np.asarray(value)
    if value.size != int(np.prod(shape)):
        raise ValueError(f"{what}: cannot reshape {list(value.shape)} to {list(shape)}")
    return value.reshape(shape)


def copy_spm_model(spm_model_file, folder, name):
    """Copy a SentencePiece model into a folder under a given name.

    Args:
        spm_model_file: str. The SentencePiece model to copy, or a TF Hub SavedModel folder
            (a preprocessing model) that holds one.
        folder: str. The destination folder.
        name: str. The file name to give the copy, e.g. "spiece.model".

    Returns:
        str. The path of the copy.

    Raises:
        FileNotFoundError: when `spm_model_file` does not exist.
    """
    if not fileio.exists(spm_model_file):
        raise FileNotFoundError(f"SentencePiece model not found: {spm_model_file}")
    return fileio.write_bytes(fileio.join(folder, name), read_spm_model(spm_model_file))


# ---- E == H: keras-hub and Hugging Face always project, albert_tf does not ----------------------
PROJECTION = (
    "bert/encoder/embedding_hidden_mapping_in/kernel",
    "bert/encoder/embedding_hidden_mapping_in/bias",
)


def identity_projection(size) -> dict:
    """Make an identity embedding projection, under Google's names.

    When embedding_size equals hidden_size, an albert_tf model has no embedding projection,
    while keras-hub and Hugging Face always have one; an identity kernel and a zero bias
    compute exactly the same thing.

    Args:
        size: int. The hidden size.

    Returns:
        dict. `bert/encoder/embedding_hidden_mapping_in/kernel` -> float32 identity
        [size, size], and `.../bias` -> float32 zeros [size].
    """
    return {PROJECTION[0]: np.eye(size, dtype="float32"), PROJECTION[1]: np.zeros(size, "float32")}


def check_identity_projection(kernel, bias, label):
    """Check that a source's embedding projection is the identity.

    An albert_tf model whose embedding_size equals its hidden_size has no projection, so it can
    only take a source whose projection does nothing.

    Args:
        kernel: array-like. The source's projection kernel.
        bias: array-like. The source's projection bias.
        label: str. The source's name, for the error message.

    Raises:
        ValueError: when the kernel is not an identity matrix or the bias is not all zeros.
    """
    kernel, bias = np.asarray(kernel), np.asarray(bias)
    square = kernel.ndim == 2 and kernel.shape[0] == kernel.shape[1]
    if not (square and np.array_equal(kernel, np.eye(kernel.shape[0])) and not bias.any()):
        raise ValueError(
            f"{label}: embedding_size == hidden_size but its embedding projection is "
            "not the identity; albert_tf's model has no projection when E == H"
        )
