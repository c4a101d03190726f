"""Training a SentencePiece model with Google's ALBERT recipe (special symbols, coverage).

The model is written atomically, so a half-trained model never appears. Inputs and the model may
be on any filesystem TensorFlow reads (gs://...); SentencePiece itself works on local copies.
"""

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
    """Trains a SentencePiece model with Google's ALBERT recipe.

    The recipe: a unigram model with `<pad>` as id 0, `<unk>` as id 1, no BOS/EOS pieces, the
    control symbols `[CLS]` `[SEP]` `[MASK]` as ids 2-4, the user-defined symbols
    `( ) " - . – £ €`, and character coverage 0.99995. The result loads with
    `FullTokenizer(spm_model_file=...)` and the in-graph `GraphTokenizer`.

    Training writes into a temporary prefix and then renames the files into place (for a remote
    prefix such as gs://... it copies them, the `.model` last), so `<prefix>.model` and
    `<prefix>.vocab` appear only when complete.

    Args:
        input_files: A path or a list of paths of plain-text training files, one sentence a
            line. Any filesystem TensorFlow reads (gs://...).
        model_prefix: Output path without extension; writes `<model_prefix>.model` and
            `<model_prefix>.vocab`.
        vocab_size: int. Number of pieces, special symbols included (Google's releases: 30000).
        model_type: SentencePiece model type: `"unigram"`, `"bpe"`, `"char"` or `"word"`.
            Defaults to `"unigram"`.
        character_coverage: Fraction of the characters the model covers; the rarest others
            map to `<unk>`. Defaults to `0.99995`.
        input_sentence_size: Maximum number of sentences read for training (a sample when the
            input has more). Defaults to `10_000_000`.
        shuffle_input_sentence: Whether that sample is drawn at random. Defaults to `True`.
        num_threads: Number of training threads; `None` uses every CPU core.
            Defaults to `None`.
        control_symbols: Control symbols, given ids from 2 upward. Keep `[CLS]` `[SEP]`
            `[MASK]`: albert_tf's tokenizers require them. Defaults to `CONTROL_SYMBOLS`.
        user_defined_symbols: Strings always kept as single pieces. Defaults to
            `USER_DEFINED_SYMBOLS`, Google's list.
        quiet: Whether to silence SentencePiece's training log. Defaults to `True`.
        **extra: Any other `sentencepiece.SentencePieceTrainer.train` option; it overrides
            the recipe's value for that option.

    Returns:
        The path of the trained model, `<model_prefix>.model` (absolute for a local prefix).

    Raises:
        FileNotFoundError: when an input file does not exist.

    Example:

    >>> import os, tempfile, albert_tf
    >>> folder = tempfile.mkdtemp()
    >>> path = albert_tf.train_sentencepiece(
    ...     "tests/data/fixtures/corpus.txt", os.path.join(folder, "spm"),
    ...     vocab_size=128, num_threads=1)
    >>> sorted(os.listdir(folder))
    ['spm.model', 'spm.vocab']
    >>> tokenizer = albert_tf.FullTokenizer(spm_model_file=path)
    >>> tokenizer.vocab_size
    128
    >>> tokenizer.convert_ids_to_tokens(range(5))
    ['<pad>', '<unk>', '[CLS]', '[SEP]', '[MASK]']
    >>> tokenizer.tokenize(tokenizer.preprocess("The cat sat."))
    ['▁the', '▁', 'c', 'at', '▁', 's', 'at', '.']
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
