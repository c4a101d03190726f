"""Pieces the keras-hub and Hugging Face formats share: renaming Google's names by rules,
reshaping tensors between layouts, the export report and the SentencePiece model a folder holds."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from albert_tf.core import fileio
from albert_tf.text.vocab_files import read_spm_model

# Where each format keeps its SentencePiece model, relative to its folder.
SPM_FILES = ("spiece.model", "assets/tokenizer/vocabulary.spm", "30k-clean.model", "spm.model")


@dataclasses.dataclass
class ExportReport:
    """What an export wrote: tensor names (in Google's names) written, and those the format
    has no place for (e.g. a SQuAD v2 head in a keras-hub preset)."""

    path: str
    written: list
    left_out: list

    def __str__(self):
        lines = [f"wrote {self.path}: {len(self.written)} variables, {len(self.left_out)} left out"]
        lines += [f"  left out (no place in this format): {n}" for n in self.left_out]
        return "\n".join(lines)


def rename(name: str, rules) -> str | None:
    """The first rule (regex, template) that matches all of `name`, applied; None if none does."""
    for pattern, template in rules:
        m = re.fullmatch(pattern, name)
        if m:
            return m.expand(template)
    return None


def reshape_checked(value, shape, what):
    """`value` reshaped to `shape` (same element count), or a ValueError naming `what`."""
    value = np.asarray(value)
    if value.size != int(np.prod(shape)):
        raise ValueError(f"{what}: cannot reshape {list(value.shape)} to {list(shape)}")
    return value.reshape(shape)


def find_spm_model(folder) -> str | None:
    """The SentencePiece model inside a model folder (any format's file name, or a TF Hub
    SavedModel's `assets/*.model`), or None."""
    if folder is None or not fileio.isdir(folder):
        return None
    for name in SPM_FILES:
        path = fileio.join(folder, name)
        if fileio.isfile(path):
            return path
    assets = fileio.join(folder, "assets")
    if fileio.isfile(fileio.join(folder, "saved_model.pb")) and fileio.isdir(assets):
        models = sorted(n for n in fileio.listdir(assets) if n.endswith(".model"))
        if models:
            return fileio.join(assets, models[0])
    return None


VOCAB_FILES = ("vocab_chinese.txt", "vocab.txt")  # Google's Chinese releases, brightmart's


def find_vocab_file(folder) -> str | None:
    """The WordPiece vocabulary inside a model folder (Google's Chinese or brightmart's
    releases), or None."""
    if folder is None or not fileio.isdir(folder):
        return None
    for name in VOCAB_FILES:
        path = fileio.join(folder, name)
        if fileio.isfile(path):
            return path
    return None


def find_tokenizer(folder, spm_model_file=None, vocab_file=None):
    """(spm_model_file, vocab_file) of a model: those given, else the folder's SentencePiece
    model, else its WordPiece vocabulary; ValueError naming the folder when it has neither."""
    if spm_model_file or vocab_file:
        return spm_model_file, vocab_file
    spm = find_spm_model(folder)
    vocab = None if spm else find_vocab_file(folder)
    if not (spm or vocab):
        raise ValueError(
            f"no tokenizer in {folder}: no SentencePiece model ({', '.join(SPM_FILES)}) "
            f"and no WordPiece vocabulary ({', '.join(VOCAB_FILES)}); give "
            "spm_model_file= or vocab_file="
        )
    return spm, vocab


def copy_spm_model(spm_model_file, folder, name):
    """Write the SentencePiece model (a file, or a TF Hub SavedModel folder holding one) to
    `folder/name`; a missing source names the file."""
    if not fileio.exists(spm_model_file):
        raise FileNotFoundError(f"SentencePiece model not found: {spm_model_file}")
    return fileio.write_bytes(fileio.join(folder, name), read_spm_model(spm_model_file))


# ---- E == H: keras-hub and Hugging Face always project, albert_tf does not ----------------------
PROJECTION = (
    "bert/encoder/embedding_hidden_mapping_in/kernel",
    "bert/encoder/embedding_hidden_mapping_in/bias",
)


def identity_projection(size) -> dict:
    """Google-named identity kernel and zero bias: an exact stand-in for the absent E→H map."""
    return {PROJECTION[0]: np.eye(size, dtype="float32"), PROJECTION[1]: np.zeros(size, "float32")}


def check_identity_projection(kernel, bias, label):
    """A model with E == H has no projection, so a source's projection must be the identity."""
    kernel, bias = np.asarray(kernel), np.asarray(bias)
    square = kernel.ndim == 2 and kernel.shape[0] == kernel.shape[1]
    if not (square and np.array_equal(kernel, np.eye(kernel.shape[0])) and not bias.any()):
        raise ValueError(
            f"{label}: embedding_size == hidden_size but its embedding projection is "
            "not the identity; albert_tf's model has no projection when E == H"
        )
