"""Convert ALBERT weights between every format albert_tf reads and writes.

    python -m albert_tf.convert --input PATH --output PATH \
        [--output_format tf1|keras|keras_hub|huggingface|onnx] \
        [--albert_config_file albert_config.json] \
        [--model pretrainer|encoder] [--spm_model_file 30k-clean.model]

The input format is detected from the files present: a `.keras` or `.weights.h5` file (Keras),
a folder with transformers' `config.json` + `model.safetensors` (Hugging Face), a folder with
keras-hub's `config.json` (keras-hub preset), or a TF1 checkpoint prefix, file or folder (Google).
`--albert_config_file` is needed only where the input carries no config (TF1, `.weights.h5`);
for TF1 an `albert_config.json` beside the checkpoint is used. Without `--output_format`, an
output ending in `.weights.h5`/`.keras` is Keras, one ending in `.onnx` ONNX (the model the input
holds, as `albert_tf.export_onnx` writes it; needs the `deploy` extra), anything else a TF1
checkpoint prefix.
The load report of the input is printed, then what was written.
"""

from __future__ import annotations

import argparse
import sys

from albert_tf.interop.model_files import FORMATS, convert_model


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m albert_tf.convert",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--input",
        required=True,
        help="TF1 checkpoint prefix/dir, .weights.h5, .keras, keras-hub preset or HF folder",
    )
    parser.add_argument(
        "--output", required=True, help="output path (a folder for keras_hub/huggingface)"
    )
    parser.add_argument(
        "--output_format",
        choices=FORMATS,
        default=None,
        help="default: keras for .weights.h5/.keras names, onnx for .onnx, else tf1",
    )
    parser.add_argument(
        "--albert_config_file",
        default=None,
        help="needed only for inputs that carry no config (TF1, .weights.h5)",
    )
    parser.add_argument(
        "--model",
        choices=("pretrainer", "encoder"),
        default=None,
        help="encoder keeps AlbertModel only; default: the model the input holds "
        "(a pretrainer for TF1 and .weights.h5)",
    )
    parser.add_argument(
        "--spm_model_file",
        default=None,
        help="SentencePiece model for keras_hub/huggingface outputs "
        "(default: the one in the input's folder)",
    )
    args = parser.parse_args(argv)
    written = []
    try:
        report = convert_model(
            args.input,
            args.output,
            args.output_format,
            albert_config_file=args.albert_config_file,
            model_kind=args.model,
            spm_model_file=args.spm_model_file,
            log=written.append,
        )
    except (ValueError, FileNotFoundError, TypeError, KeyError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(report)
    print("\n".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
