"""Reading tokenizer files (SentencePiece models, WordPiece vocabularies), local or gs://, with
one-line errors that say what kind of file was passed instead."""

from __future__ import annotations

import hashlib

import sentencepiece as spm

from albert_tf.core import fileio

SPM_OP = "SentencepieceOp"  # tf-text's op that holds the model proto in its `model` attribute


def _read_bytes(path: str) -> bytes:
    """File bytes, from any filesystem (gs://..., through the file layer)."""
    path = str(path)
    if not fileio.isfile(path):
        raise FileNotFoundError(f"file not found: {path}")
    return fileio.read_bytes(path)


def _describe_text_file(data: bytes) -> str | None:
    """If data is a text vocabulary, says which kind (for a clear error), else None."""
    try:
        text = data[:65536].decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "an empty or whitespace-only text file"
    if all("\t" in ln for ln in lines[:50]):
        return "a SentencePiece .vocab text file (pass the .model file next to it)"
    if any(ln.strip() in ("[PAD]", "[UNK]", "[CLS]") for ln in lines[:1000]):
        return "a WordPiece vocabulary text file (pass it as vocab_file=, not spm_model_file=)"
    return "a text file, not a SentencePiece model"


def read_spm_model(path) -> bytes:
    """The bytes of a SentencePiece model: a `.model` file, or a TF Hub SavedModel folder, a
    preprocessing model (`albert_en_preprocess/3`: the model proto sits in its SentencePiece
    op) or an encoder (its `assets/*.model`). Other folders are a ValueError naming the path."""
    path = str(path)
    if fileio.is_folder(path):
        return _saved_model_spm(path)
    return _read_bytes(path)


def _saved_model_spm(folder: str) -> bytes:
    # deferred: reading a SavedModel imports TensorFlow, which a tokenizer of a file never needs
    from albert_tf.core.saved_model_proto import is_saved_model, read_saved_model

    if not is_saved_model(folder):
        raise ValueError(
            f"{folder} is a folder, not a SentencePiece model (nor a TF Hub SavedModel with one)"
        )
    assets = fileio.join(folder, "assets")
    models = (
        sorted(n for n in fileio.listdir(assets) if n.endswith(".model"))
        if (fileio.isdir(assets))
        else []
    )
    if models:
        return _read_bytes(fileio.join(assets, models[0]))
    protos = [p for p in read_saved_model(folder).op_attrs(SPM_OP, "model") if p]
    if not protos:
        raise ValueError(
            f"SavedModel {folder} holds no SentencePiece model (no assets/*.model, no {SPM_OP} op)"
        )
    if len(protos) > 1:
        raise ValueError(f"SavedModel {folder} holds {len(protos)} different SentencePiece models")
    return protos[0]


def tokenizer_fingerprint(path) -> str:
    """SHA-256 of a tokenizer's bytes (a SentencePiece model or a vocabulary file, or the
    SentencePiece model of a TF Hub SavedModel folder), for cache keys."""
    return hashlib.sha256(read_spm_model(path)).hexdigest()


def load_sentencepiece(path: str):
    """Loads a SentencePiece model (a file, or a TF Hub SavedModel folder holding one) with
    one-line errors for missing, text or corrupt files."""
    data = read_spm_model(path)
    kind = _describe_text_file(data)
    if kind is not None:
        raise ValueError(f"{path} is {kind}")
    try:
        return spm.SentencePieceProcessor(model_proto=data)
    except (RuntimeError, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"{path} is not a valid SentencePiece model (corrupt or truncated): {first}"
        ) from None


def load_vocab(vocab_file: str) -> dict:
    """A WordPiece vocabulary: the first field of each non-empty line, id = order of first
    appearance (also reads SentencePiece .vocab files, whose lines are 'piece<TAB>score')."""
    text = _read_bytes(vocab_file).decode("utf-8", "ignore")
    vocab: dict = {}
    for line in text.splitlines():
        token = line.strip().split()[0] if line.strip() else None
        if token is not None and token not in vocab:
            vocab[token] = len(vocab)
    return vocab
