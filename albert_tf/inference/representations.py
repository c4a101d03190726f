"""Run a pretrained ALBERT on raw text: per-token features, pooled vectors and [MASK] filling.

`extract_representations` gives the hidden states of chosen layers for every token, or the
pooled [CLS] vector; `fill_mask` predicts the pieces behind [MASK] with the pretrainer's
masked-LM head. The model is any albert_tf model with an encoder (an AlbertPretrainer, an
AlbertModel, a fine-tuned model), or a model folder: Google's release layout
(albert_config.json, a TF1 checkpoint, the SentencePiece model) or any folder that
`python -m albert_tf.convert` reads.
"""

from __future__ import annotations

import functools
import os
import re
from typing import List, Sequence

import numpy as np

from albert_tf.core import fileio
from albert_tf.formats.release_folder import config_file_of, tokenizer_files
from albert_tf.interop.model_files import read_model
from albert_tf.text.encoding import TextEncoder
from albert_tf.text.packing import pack_ids

MASK = "[MASK]"
_PAIR = re.compile(r"^(.*) \|\|\| (.*)$")  # Google's extract_features: "text_a ||| text_b"


def load_pretrained(
    model_dir=None,
    *,
    albert_config_file=None,
    init_checkpoint=None,
    spm_model_file=None,
    vocab_file=None,
    do_lower_case=True,
):
    """Load a pretrained model and its tokenizer from a model folder or from separate files.

    The folder may be Google's release layout (albert_config.json, a TF1 checkpoint,
    `30k-clean.model`) or any folder `convert_model` reads (Hugging Face, keras-hub). Each file
    given by keyword overrides what the folder holds. A TF1 checkpoint gives an
    AlbertPretrainer, so the result also works with `fill_mask`.

    Args:
        model_dir: str or None. The model folder. Defaults to None (then `init_checkpoint` is
            required).
        albert_config_file: str or None. The model's `albert_config.json`. Defaults to None:
            the one in `model_dir`.
        init_checkpoint: str or None. The checkpoint (or any model file) to load. Defaults to
            None: `model_dir` itself.
        spm_model_file: str or None. The SentencePiece model. Defaults to None: the one in
            `model_dir`.
        vocab_file: str or None. A WordPiece vocabulary, for models without a SentencePiece
            model (Google's Chinese releases). Defaults to None: the one in `model_dir` when it
            has no SentencePiece model.
        do_lower_case: bool. Lower-case text before tokenizing, as Google's English models
            expect. Defaults to True.

    Returns:
        tuple `(model, encoder)`: the albert_tf model and a `TextEncoder` for its tokenizer.

    Raises:
        ValueError: when neither `model_dir` nor `init_checkpoint` is given, or no tokenizer
            is given or found in `model_dir`.

    Example:

    >>> import albert_tf
    >>> model, encoder = albert_tf.load_pretrained("tests/data/fixtures/albert_tiny")
    >>> type(model).__name__, model.config.hidden_size
    ('AlbertPretrainer', 32)
    >>> encoder.tokenize("Hello world")
    ['▁', 'h', 'ell', 'o', '▁w', 'or', 'ld']
    """
    source = init_checkpoint or model_dir
    if source is None:
        raise ValueError("give a model folder or init_checkpoint= (with albert_config_file=)")
    config_file = config_file_of(model_dir, albert_config_file)
    spm_model_file, vocab_file = tokenizer_files(model_dir, spm_model_file, vocab_file)
    model, _ = read_model(os.fspath(source), config_file)
    return model, TextEncoder.from_files(spm_model_file, vocab_file, do_lower_case)


@functools.lru_cache(maxsize=2)
def _cached_pretrained(model_dir, do_lower_case):
    """load_pretrained of a folder, kept for the next fill_mask call on it."""
    return load_pretrained(model_dir, do_lower_case=do_lower_case)


def encoder_of(model):
    """Give the encoder inside a model.

    Args:
        model: an albert_tf model.

    Returns:
        The `AlbertModel` inside `model` (`model.albert`), or `model` itself when it is one.
    """
    return model if hasattr(model, "embedding") else model.albert


def read_texts(path) -> List[tuple]:
    """Read texts, one per line, as Google's extract_features does.

    A line "text_a ||| text_b" is a pair of texts.

    Args:
        path: str. The text file (any filesystem TensorFlow knows).

    Returns:
        list of `(text_a, text_b)` tuples; `text_b` is None for a single text.
    """
    lines = fileio.read_text(path).splitlines()
    out = []
    for line in lines:
        line = line.strip()
        match = _PAIR.match(line)
        out.append((match.group(1), match.group(2)) if match else (line, None))
    return out


def encode_texts(encoder, texts: Sequence, max_seq_length: int) -> dict:
    """Tokenize and pack texts into the model's int32 inputs.

    Each input is packed as `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, truncated to fit and
    padded to `max_seq_length`.

    Args:
        encoder: `TextEncoder`. The tokenizer.
        texts: sequence of str or `(text_a, text_b)` pairs (`text_b` may be None).
        max_seq_length: int. The length of every packed row.

    Returns:
        dict with `input_ids`, `input_mask` and `segment_ids` (int32 [N, max_seq_length]) and
        `tokens` (for each text, the list of its pieces without padding).
    """
    rows = []
    for item in texts:
        a, b = (item, None) if isinstance(item, str) else item
        rows.append(
            pack_ids(
                encoder.ids(a),
                None if b is None else encoder.ids(b),
                max_seq_length,
                encoder.cls_id,
                encoder.sep_id,
                encoder.pad_id,
            )
        )
    arrays = {
        k: np.array([r[k] for r in rows], np.int32).reshape(len(rows), max_seq_length)
        for k in ("input_ids", "input_mask", "segment_ids")
    }
    inv = encoder.tokenizer.convert_ids_to_tokens
    arrays["tokens"] = [
        inv(ids[mask == 1]) for ids, mask in zip(arrays["input_ids"], arrays["input_mask"])
    ]
    return arrays


def check_layers(layers, num_layers) -> List[int]:
    """Check layer indices into the encoder's outputs.

    Args:
        layers: iterable of int. Indices in Python style: 0 is the first layer's output, -1 the
            last.
        num_layers: int. How many layer outputs the encoder gives.

    Returns:
        list of int. The indices, as ints.

    Raises:
        ValueError: when `layers` is empty or an index is out of range.
    """
    layers = [int(i) for i in layers]
    if not layers:
        raise ValueError("give at least one layer")
    for i in layers:
        if not -num_layers <= i < num_layers:
            raise ValueError(
                f"layer {i} is out of range: the model has {num_layers} encoder "
                f"layer outputs (use -{num_layers}..{num_layers - 1})"
            )
    return layers


def extract_representations(
    model, encoder, texts: Sequence, layers=(-1,), pooled=False, max_seq_length=128, batch_size=8
) -> dict:
    """Compute features of raw texts with a pretrained encoder.

    Gives either each chosen layer's output at every position (as Google's
    `extract_features.py`), or the pooled [CLS] vector, which is what a classifier sees.
    Layers index the encoder's block outputs like Google's `all_encoder_layers`: one output per
    block application (num_hidden_layers × inner_group_num of them).

    Args:
        model: an albert_tf model with an encoder (AlbertPretrainer, AlbertModel or a
            fine-tuned model).
        encoder: `TextEncoder`. The model's tokenizer (see `load_pretrained`).
        texts: sequence of str or `(text_a, text_b)` pairs.
        layers: sequence of int. Which layer outputs to return, Python style (-1 is the last).
            Defaults to `(-1,)`. Ignored when `pooled` is True.
        pooled: bool. Return the pooled vector instead of per-token features. Defaults to
            False.
        max_seq_length: int. Length of each packed input in pieces (longer texts are
            truncated). Defaults to 128.
        batch_size: int. Texts per forward pass. Defaults to 8.

    Returns:
        dict with the packed inputs `input_ids`, `input_mask`, `segment_ids` (int32 [N, T]) and
        `tokens` (each text's pieces), plus either `pooled` (float32 [N, H]) or `features`
        (float32 [N, len(layers), T, H], padding positions included) and `layers` (the indices
        used).

    Raises:
        ValueError: when a layer index is out of range.

    Example:

    >>> import albert_tf
    >>> model, encoder = albert_tf.load_pretrained("tests/data/fixtures/albert_tiny")
    >>> out = albert_tf.extract_representations(
    ...     model, encoder, ["Hello world", ("Is it?", "Yes.")], layers=(-1, 0),
    ...     max_seq_length=12)
    >>> out["features"].shape  # [texts, layers, positions, hidden_size]
    (2, 2, 12, 32)
    >>> out["tokens"][1]
    ['[CLS]', '▁is', '▁it', '<unk>', '[SEP]', '▁', 'y', 'es', '.', '[SEP]']
    >>> out["segment_ids"][1].tolist()
    [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0]
    >>> albert_tf.extract_representations(
    ...     model, encoder, ["Hello world"], pooled=True, max_seq_length=12)["pooled"].shape
    (1, 32)
    """
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    albert = encoder_of(model)
    num = albert.config.num_hidden_layers * albert.config.inner_group_num
    layers = check_layers(layers, num)
    inputs = encode_texts(encoder, texts, max_seq_length)
    chunks = []
    for start in range(0, len(inputs["input_ids"]), batch_size):
        batch = {
            k: tf.constant(inputs[k][start : start + batch_size])
            for k in ("input_ids", "input_mask", "segment_ids")
        }
        out = albert(batch, training=False)
        if pooled:
            chunks.append(out["pooled_output"].numpy())
        else:
            chunks.append(np.stack([out["encoder_outputs"][i].numpy() for i in layers], axis=1))
    result = dict(inputs)
    if pooled:
        result["pooled"] = np.concatenate(chunks).astype(np.float32)
    else:
        result["features"] = np.concatenate(chunks).astype(np.float32)
        result["layers"] = np.array(layers, np.int32)
    return result


# ---- fill-mask
# ------------------------------------------------------------------------------------
def _mask_ids(encoder, text) -> tuple:
    """Give (ids with [CLS] ... [SEP], positions of the [MASK]s). Text after a mask that does
    not start with a blank continues the masked word, so its first piece loses the word-start
    ▁."""
    parts = text.split(MASK)
    if len(parts) == 1:
        raise ValueError(f"the text has no {MASK}: {text!r}")
    tok, ids, positions = encoder.tokenizer, [encoder.cls_id], []
    for k, part in enumerate(parts):
        pieces = encoder.tokenize(part) if part.strip() else []
        if k and pieces and not part[:1].isspace() and pieces[0].startswith("\u2581"):
            rest = pieces[0][1:]
            pieces = (
                pieces[1:] if not rest else ([rest] + pieces[1:] if rest in tok.vocab else pieces)
            )
        ids += encoder.convert_tokens_to_ids(pieces)
        if k < len(parts) - 1:
            positions.append(len(ids))
            ids.append(tok.mask_id)
    return ids + [encoder.sep_id], positions


def fill_mask(
    model_or_folder,
    text: str,
    top_k: int = 5,
    *,
    spm_model_file=None,
    encoder=None,
    do_lower_case=True,
    vocab_file=None,
):
    """Predict the most likely pieces for each [MASK] in a text.

    Uses the pretrainer's masked-LM head. A text with several [MASK]s gets one list per mask;
    all masks are predicted independently, in one forward pass. Text right after a [MASK] with
    no blank in between continues the masked word (its first piece loses the word-start ▁).

    Args:
        model_or_folder: an `AlbertPretrainer`, or a model folder (str or path-like) that
            `load_pretrained` reads; a folder is loaded once and then cached.
        text: str. The text, with at least one "[MASK]".
        top_k: int. How many pieces to return per mask, at least 1. Defaults to 5.
        spm_model_file: str or None. The SentencePiece model, when `model_or_folder` is a
            model. Defaults to None.
        encoder: `TextEncoder` or None. The tokenizer, instead of `spm_model_file` or
            `vocab_file`. Defaults to None (a folder's own tokenizer).
        do_lower_case: bool. Lower-case the text before tokenizing. Defaults to True.
        vocab_file: str or None. A WordPiece vocabulary, for a model without a SentencePiece
            model. Defaults to None.

    Returns:
        For one [MASK], a list of `top_k` dicts, best first, each with `token` (the piece),
        `id` and `score` (the masked-LM head's softmax probability). For several [MASK]s, a
        list of such lists, one per mask.

    Raises:
        ValueError: when the model has no masked-LM head, no tokenizer is given for a model,
            `top_k` < 1, the text has no [MASK], or the text is longer than the model's
            `max_position_embeddings`.

    Example:

    >>> import albert_tf
    >>> guesses = albert_tf.fill_mask("tests/data/fixtures/albert_tiny", "the [MASK] is here.",
    ...                               top_k=2)
    >>> [(g["token"], g["id"], round(g["score"], 3)) for g in guesses]  # random test weights
    [('{', 438, 0.019), ('▁inherit', 813, 0.009)]
    >>> model, encoder = albert_tf.load_pretrained("tests/data/fixtures/albert_tiny")
    >>> both = albert_tf.fill_mask(model, "a [MASK] b [MASK].", top_k=1, encoder=encoder)
    >>> [[g["token"] for g in guesses] for guesses in both]
    [['{'], ['{']]
    """
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    if isinstance(model_or_folder, (str, os.PathLike)):
        model, folder_encoder = _cached_pretrained(fileio.abspath(model_or_folder), do_lower_case)
        encoder = encoder or folder_encoder
    else:
        model = model_or_folder
    if not hasattr(model, "mlm_head"):
        raise ValueError(
            f"fill_mask needs a model with the masked-LM head (an AlbertPretrainer), "
            f"not a {type(model).__name__}"
        )
    if encoder is None:
        if spm_model_file is None and vocab_file is None:
            raise ValueError("fill_mask on a model needs spm_model_file=, vocab_file= or encoder=")
        encoder = TextEncoder.from_files(spm_model_file, vocab_file, do_lower_case=do_lower_case)
    if top_k < 1:
        raise ValueError(f"top_k={top_k}: must be >= 1")
    ids, positions = _mask_ids(encoder, text)
    if len(ids) > model.config.max_position_embeddings:
        raise ValueError(
            f"the text is {len(ids)} pieces with [CLS]/[SEP], over the model's "
            f"max_position_embeddings {model.config.max_position_embeddings}"
        )
    features = {
        "input_ids": tf.constant([ids], tf.int32),
        "masked_lm_positions": tf.constant([positions], tf.int32),
    }
    logits = np.asarray(model(features, training=False)["mlm_logits"])[0].astype(np.float64)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    inv = encoder.tokenizer.convert_ids_to_tokens
    answers = []
    for row in probs:
        best = np.argsort(-row, kind="stable")[:top_k]
        answers.append(
            [{"token": t, "id": int(i), "score": float(row[i])} for i, t in zip(best, inv(best))]
        )
    return answers[0] if len(answers) == 1 else answers
