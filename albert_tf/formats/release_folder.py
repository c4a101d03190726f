"""Where is the model: the config, the checkpoint and the tokenizer of a release folder (Google's
`albert_config.json` + `model.ckpt-best` + `30k-clean.model`, a driver run's output folder, a
Hugging Face, keras-hub or TF Hub folder, a Model Garden checkpoint), found in one place.

It imports TensorFlow only when a call needs it, so a command line may import it. Every entry
point asks here: `AlbertTextClassifier.from_pretrained` (keras_api), `load_pretrained`
and `fill_mask` (inference), `read_model` / `convert_model` (interop) and `extract_features`.
"""

from __future__ import annotations

import os

from albert_tf.core import fileio
from albert_tf.core.config import CONFIG_FILE, AlbertConfig
from albert_tf.core.errors import InputError

# Where each format keeps its SentencePiece model, relative to its folder.
SPM_FILES = ("spiece.model", "assets/tokenizer/vocabulary.spm", "30k-clean.model", "spm.model")


def find_spm_model(folder) -> str | None:
    """Find the SentencePiece model inside a model folder.

    The file names of every supported format are tried in turn: `spiece.model` (Hugging Face),
    `assets/tokenizer/vocabulary.spm` (keras-hub), `30k-clean.model` (Google's releases) and
    `spm.model`; then a TF Hub SavedModel's `assets/*.model`.

    Args:
        folder: str or None. The model folder.

    Returns:
        str or None. The path of the SentencePiece model, or None when `folder` is None, not a
        folder, or holds none.

    Example:

    >>> from albert_tf.formats.release_folder import find_spm_model
    >>> find_spm_model("tests/data/fixtures/albert_tiny")
    'tests/data/fixtures/albert_tiny/30k-clean.model'
    """
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
    """Find the WordPiece vocabulary inside a model folder.

    Google's Chinese releases name it `vocab_chinese.txt`, brightmart's `vocab.txt`.

    Args:
        folder: str or None. The model folder.

    Returns:
        str or None. The path of the vocabulary file, or None when there is none.
    """
    if folder is None or not fileio.isdir(folder):
        return None
    for name in VOCAB_FILES:
        path = fileio.join(folder, name)
        if fileio.isfile(path):
            return path
    return None


def tokenizer_files(folder, spm_model_file=None, vocab_file=None):
    """Choose a model's tokenizer files: those given, else those found in its folder.

    When neither file is given, the folder's SentencePiece model is used, else its WordPiece
    vocabulary.

    Args:
        folder: str or None. The model folder to search.
        spm_model_file: str or None. A SentencePiece model chosen by the caller. Defaults to
            None.
        vocab_file: str or None. A WordPiece vocabulary chosen by the caller. Defaults to
            None.

    Returns:
        tuple `(spm_model_file, vocab_file)`; at least one of them is not None.

    Raises:
        ValueError: when none is given and the folder holds neither kind of file.

    Example:

    >>> from albert_tf.formats.release_folder import tokenizer_files
    >>> tokenizer_files("tests/data/fixtures/albert_tiny")
    ('tests/data/fixtures/albert_tiny/30k-clean.model', None)
    """
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


def config_file_of(path, albert_config_file=None):
    """The config file of a model: the one given, else `albert_config.json` in the model's
    folder (a folder, or the folder of a checkpoint prefix or file).

    Args:
        path: A model folder, or a checkpoint prefix or file; or None.
        albert_config_file: A config file given by the caller, or None.

    Returns:
        str or None: the file, or None when none is given and none is there.

    Example:

    >>> from albert_tf.formats.release_folder import config_file_of
    >>> config_file_of("tests/data/fixtures/albert_tiny")
    'tests/data/fixtures/albert_tiny/albert_config.json'
    """
    if albert_config_file or path is None:
        return albert_config_file
    beside = fileio.join(fileio.folder_of(path), CONFIG_FILE)
    return beside if fileio.isfile(beside) else None


def release_config(path, albert_config_file=None) -> AlbertConfig:
    """The AlbertConfig of a model: its config file (`config_file_of`), else (a TF Hub
    SavedModel or a Model Garden checkpoint) the one read off the release.

    Args:
        path: A model folder, or a checkpoint prefix or file.
        albert_config_file: A config file given by the caller, or None.

    Returns:
        The AlbertConfig.

    Raises:
        InputError: No config is given or found.
    """
    # deferred: keeps TensorFlow off this module's import (the converter's command line)
    from albert_tf.formats.tfhub import source_kind, tfhub_config

    path = os.fspath(path)
    config_file = config_file_of(path, albert_config_file)
    if config_file is not None and fileio.isfile(config_file):
        return AlbertConfig.from_json_file(config_file)
    if source_kind(path) is not None:
        return tfhub_config(path, albert_config_file)
    raise InputError(f"{path}: no {CONFIG_FILE}; pass albert_config_file")


def release_checkpoint(folder) -> str:
    """The weights of a release folder: its `model.ckpt-best`, the folder itself when it is a
    TF Hub SavedModel or holds a Model Garden checkpoint, else its TF1 or driver checkpoint.

    Args:
        folder: A model folder.

    Returns:
        A checkpoint prefix, or the folder (a TF2 release).

    Raises:
        FileNotFoundError: The folder holds no checkpoint.
    """
    # deferred: keeps TensorFlow off this module's import (the converter's command line)
    from albert_tf.formats.tf1 import BEST_CHECKPOINT, resolve_checkpoint_path

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats.tfhub import source_kind

    best = fileio.join(folder, BEST_CHECKPOINT)
    if fileio.isfile(best + ".index"):
        return best
    if source_kind(folder) is not None:
        return folder
    return resolve_checkpoint_path(folder)
