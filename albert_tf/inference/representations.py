"""Representations from a pretrained ALBERT on raw text: the hidden states of chosen layers per
token, the pooled [CLS] vector, and filling in [MASK] with the pretrainer's masked-LM head.

The model is any albert_tf model with an encoder (an AlbertPretrainer, an AlbertModel, a
fine-tuned model) or a model folder (Google's release layout: albert_config.json, a TF1
checkpoint, the SentencePiece model; or any folder `python -m albert_tf.convert` reads).
"""

from __future__ import annotations

import functools
import os
import re
from typing import List, Sequence

import numpy as np

from albert_tf.core import fileio
from albert_tf.formats.common import find_tokenizer
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
    """(model, TextEncoder) of a model folder, or of a config + checkpoint + tokenizer given one
    by one (each overrides what the folder holds). A TF1 checkpoint gives an AlbertPretrainer."""
    source = init_checkpoint or model_dir
    if source is None:
        raise ValueError("give a model folder or init_checkpoint= (with albert_config_file=)")
    config_file = albert_config_file
    if (
        config_file is None
        and model_dir
        and fileio.isfile(fileio.join(model_dir, "albert_config.json"))
    ):
        config_file = fileio.join(model_dir, "albert_config.json")
    spm_model_file, vocab_file = find_tokenizer(model_dir, spm_model_file, vocab_file)
    model, _ = read_model(os.fspath(source), config_file)
    return model, TextEncoder.from_files(spm_model_file, vocab_file, do_lower_case)


@functools.lru_cache(maxsize=2)
def _cached_pretrained(model_dir, do_lower_case):
    """load_pretrained of a folder, kept for the next fill_mask call on it."""
    return load_pretrained(model_dir, do_lower_case=do_lower_case)


def encoder_of(model):
    """The AlbertModel inside `model` (itself when it is one)."""
    return model if hasattr(model, "embedding") else model.albert


def read_texts(path) -> List[tuple]:
    """(text_a, text_b or None) per line of a text file, a pair written "text_a ||| text_b"."""
    lines = fileio.read_text(path).splitlines()
    out = []
    for line in lines:
        line = line.strip()
        match = _PAIR.match(line)
        out.append((match.group(1), match.group(2)) if match else (line, None))
    return out


def encode_texts(encoder, texts: Sequence, max_seq_length: int) -> dict:
    """Packed int32 inputs [N, max_seq_length] of (text_a, text_b) pairs or plain strings, and
    each example's real pieces (`tokens`)."""
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
    """Layer indices into the encoder's outputs (Python style: -1 is the last); a ValueError
    names one out of range."""
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
    """Features of raw texts (strings or (text_a, text_b) pairs).

    Returns the packed inputs (`input_ids`, `input_mask`, `segment_ids` [N,T], `tokens`) and
    either `pooled` [N,H] (the pooler's output, what a classifier sees) or `features`
    [N, len(layers), T, H] (each chosen layer's output per position, padding included) with
    `layers`. Layers index the encoder's block outputs as Google's `all_encoder_layers`.
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
    """(ids with [CLS] ... [SEP], positions of the [MASK]s). Text after a mask that does not
    start with a blank continues the masked word, so its first piece loses the word-start ▁."""
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
    """The top_k pieces for the [MASK] in `text`, best first, each {"token", "id", "score"}
    (score: the masked-LM head's softmax probability). A text with several [MASK]s gives a list
    of such lists, one per mask, each predicted independently in one forward pass.

    `model_or_folder`: an AlbertPretrainer, or a model folder (loaded once, then cached);
    a model needs `spm_model_file=` (or `vocab_file=` for a WordPiece model) or `encoder=` (a
    TextEncoder) for its tokenizer."""
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
    logits = model(features, training=False)["mlm_logits"].numpy()[0].astype(np.float64)
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
