"""Training a SentencePiece model with Google's ALBERT recipe (special symbols, coverage), written
atomically so a half-trained model never appears; inputs and the model may be on any filesystem
(gs://...), SentencePiece itself works on local copies."""

from __future__ import annotations

import contextlib
import os

import sentencepiece as spm

from albert_tf.core import fileio

CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac")


def train_sentencepiece(
    input_files,
    model_prefix,
    vocab_size,
    *,
    model_type="unigram",
    character_coverage=0.99995,
    input_sentence_size=10_000_000,
    shuffle_input_sentence=True,
    num_threads=None,
    control_symbols=CONTROL_SYMBOLS,
    user_defined_symbols=USER_DEFINED_SYMBOLS,
    quiet=True,
    **extra,
) -> str:
    """Trains a SentencePiece model with Google's ALBERT recipe; returns the .model path.

    Unigram, pad 0 <pad>, unk 1 <unk>, no bos/eos, control symbols [CLS] [SEP] [MASK]
    (ids 2-4), user symbols ( ) " - . – £ €, coverage 0.99995. Trains into a temporary
    prefix and renames (a remote prefix, gs://...: copies, the .model last), so
    `<prefix>.model` / `.vocab` appear only when complete.
    """
    if isinstance(input_files, (str, os.PathLike)):
        input_files = [input_files]
    input_files = [str(p) for p in input_files]
    for path in input_files:
        if not fileio.isfile(path):
            raise FileNotFoundError(f"training input not found: {path}")
    model_prefix = fileio.abspath(str(model_prefix))
    with contextlib.ExitStack() as stack:
        local_inputs = [stack.enter_context(fileio.local_copy(p)) for p in input_files]
        # a local prefix: trained beside it and renamed; a remote one: trained in local scratch
        tmp_dir = stack.enter_context(
            fileio.scratch_folder(beside=model_prefix, prefix=".spm_train_")
        )
        tmp_prefix = os.path.join(tmp_dir, "spm")
        options = dict(
            input=local_inputs,
            model_prefix=tmp_prefix,
            vocab_size=int(vocab_size),
            model_type=model_type,
            character_coverage=character_coverage,
            input_sentence_size=input_sentence_size,
            shuffle_input_sentence=shuffle_input_sentence,
            pad_id=0,
            pad_piece="<pad>",
            unk_id=1,
            unk_piece="<unk>",
            bos_id=-1,
            eos_id=-1,
            control_symbols=list(control_symbols),
            user_defined_symbols=list(user_defined_symbols),
            num_threads=num_threads or os.cpu_count() or 1,
        )
        if quiet:
            options["minloglevel"] = 2
        options.update(extra)
        spm.SentencePieceTrainer.train(**options)
        place = fileio.copy if fileio.is_remote(model_prefix) else fileio.rename
        place(tmp_prefix + ".vocab", model_prefix + ".vocab")
        place(tmp_prefix + ".model", model_prefix + ".model")  # the model last: it is the marker
    return model_prefix + ".model"
