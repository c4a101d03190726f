"""Hidden states of a pretrained ALBERT for raw text, as Google's extract_features.py:

    python -m albert_tf.extract_features --input_file texts.txt --output_file out.jsonl \
        --model_dir albert_base [--layers -1,-2,-3,-4] [--pooled] [--max_seq_length 128] \
        [--batch_size 8]

`--input_file`: one text a line, or a pair as "text_a ||| text_b". The model is `--model_dir`
(albert_config.json, a checkpoint, the SentencePiece model) or `--albert_config_file`,
`--init_checkpoint` and `--spm_model_file` (each overrides the folder's). `--output_file` ends
in `.jsonl` (per token as Google's: {"linex_index", "features": [{"token", "layers": [{"index",
"values"}]}]}; with --pooled {"linex_index", "pooled"}) or `.npz` (arrays: input_ids,
input_mask, segment_ids, tokens, and layers + features [N, layers, T, H] or pooled [N, H]).
With --pooled, --layers is not used. Values are float32 written in full. Bad input is one `error:`
line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.drivers import console
from albert_tf.drivers import validation as v
from albert_tf.formats.release_folder import config_file_of
from albert_tf.inference.representations import (
    check_layers,
    encoder_of,
    extract_representations,
    load_pretrained,
    read_texts,
)

OUTPUT_KINDS = (".jsonl", ".npz")


def write_jsonl(path, result):
    """Google's per-token JSON lines (only real tokens), or one pooled vector per line."""
    with fileio.atomic_path(path) as tmp, fileio.open_file(tmp, "w") as f:
        for i, tokens in enumerate(result["tokens"]):
            if "pooled" in result:
                record = {"linex_index": i, "pooled": result["pooled"][i].tolist()}
            else:
                layers = result["layers"].tolist()
                record = {
                    "linex_index": i,
                    "features": [
                        {
                            "token": token,
                            "layers": [
                                {"index": index, "values": result["features"][i, k, t].tolist()}
                                for k, index in enumerate(layers)
                            ],
                        }
                        for t, token in enumerate(tokens)
                    ],
                }
            f.write(json.dumps(record) + "\n")


def write_npz(path, result):
    """All arrays of `result` in one .npz (tokens as a fixed-width string array, "" padded)."""
    n, length = result["input_ids"].shape
    tokens = np.full((n, length), "", dtype=object)
    for i, row in enumerate(result["tokens"]):
        tokens[i, : len(row)] = row
    arrays = {k: v for k, v in result.items() if k != "tokens"}
    arrays["tokens"] = tokens.astype(str) if n else np.zeros((0, length), "<U1")
    fileio.write_npz(path, arrays)


def parse_layers(text) -> list:
    """--layers "-1,-2" as [-1, -2]."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(
            f"--layers={text!r}: give comma-separated integers, e.g. -1,-2,-3,-4"
        ) from None


def _check(args):
    """Every flag and file, before any weights are read; returns (layers, config)."""
    v.check_file("input_file", args.input_file, "input file")
    if not v.check_utf8("input_file", args.input_file):
        raise InputError(f"--input_file: {args.input_file} holds only blank lines")
    if not args.output_file.endswith(OUTPUT_KINDS):
        raise InputError(f"--output_file: {args.output_file} must end in .jsonl or .npz")
    v.check_output_file("output_file", args.output_file)
    if not (args.model_dir or args.init_checkpoint):
        raise InputError("give --model_dir (or --init_checkpoint with --albert_config_file)")
    if args.model_dir:
        v.check_dir("model_dir", args.model_dir, "model folder")
    for flag in ("spm_model_file", "vocab_file", "albert_config_file"):
        if getattr(args, flag):
            v.check_file(flag, getattr(args, flag))
    if args.batch_size < 1:
        raise InputError(f"--batch_size={args.batch_size}: must be >= 1")
    layers = parse_layers(args.layers)
    config_file = config_file_of(args.model_dir, args.albert_config_file)
    if config_file is None:
        return layers, None  # a self-describing folder (keras-hub, Hugging Face): checked later
    config = v.load_config("albert_config_file", config_file)
    _check_against(args, layers, config)
    return layers, config


def _check_against(args, layers, config):
    """--max_seq_length and --layers must fit the model's config."""
    if not 2 <= args.max_seq_length <= config.max_position_embeddings:
        raise InputError(
            f"--max_seq_length={args.max_seq_length}: must be in 2.."
            f"{config.max_position_embeddings} (the model's max_position_embeddings)"
        )
    try:
        check_layers(layers, config.num_hidden_layers * config.inner_group_num)
    except ValueError as e:
        raise InputError(f"--layers={args.layers}: {e}") from None


def run(args) -> dict:
    """Check the flags, load the model, compute the features and write the output file."""
    layers, config = _check(args)
    try:
        model, encoder = load_pretrained(
            args.model_dir,
            albert_config_file=args.albert_config_file,
            init_checkpoint=args.init_checkpoint,
            spm_model_file=args.spm_model_file,
            vocab_file=args.vocab_file,
            do_lower_case=args.do_lower_case,
        )
    except (ValueError, FileNotFoundError) as e:
        raise InputError(
            f"--{'init_checkpoint' if args.init_checkpoint else 'model_dir'}: {e}"
        ) from None
    if config is None:
        _check_against(args, layers, encoder_of(model).config)
    texts = read_texts(args.input_file)
    result = extract_representations(
        model, encoder, texts, layers, args.pooled, args.max_seq_length, args.batch_size
    )
    (write_npz if args.output_file.endswith(".npz") else write_jsonl)(args.output_file, result)
    return result


def parser():
    """The command line (Google's flag names)."""
    p = argparse.ArgumentParser(
        prog="python -m albert_tf.extract_features",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--input_file", required=True, help='one text a line, or "text_a ||| text_b"')
    p.add_argument("--output_file", required=True, help="a .jsonl or .npz file")
    p.add_argument("--model_dir", help="a model folder (config, checkpoint, SentencePiece model)")
    p.add_argument("--albert_config_file", help="albert_config.json (default: in --model_dir)")
    p.add_argument("--init_checkpoint", help="checkpoint (default: the one in --model_dir)")
    p.add_argument("--spm_model_file", help="SentencePiece model (default: the one in --model_dir)")
    p.add_argument(
        "--vocab_file", help="WordPiece vocab (the Chinese releases) instead of an spm model"
    )
    p.add_argument("--layers", default="-1,-2,-3,-4", help="encoder layers, -1 the last")
    p.add_argument("--pooled", action="store_true", help="one pooled [CLS] vector per text")
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--do_lower_case", action=argparse.BooleanOptionalAction, default=True)
    return p


def main(argv=None) -> int:
    """Run the CLI; bad input is one `error:` line on stderr and exit code 2."""
    args = parser().parse_args(argv)
    console.import_tensorflow_quietly()  # TensorFlow's start-up lines stay off the console
    try:
        run(args)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.output_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
