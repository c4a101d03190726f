"""Convert ALBERT weights between every format albert_tf reads and writes.

    python -m albert_tf.convert --input PATH --output PATH \
        [--output_format tf1|keras|keras_hub|huggingface|tfhub|onnx] \
        [--albert_config_file albert_config.json] [--model pretrainer|encoder] \
        [--spm_model_file 30k-clean.model]

The input format is detected from the files present: a `.keras` or `.weights.h5` file (Keras),
a folder with transformers' `config.json` + `model.safetensors` (Hugging Face), a folder with
keras-hub's `config.json` (keras-hub preset), a SavedModel folder (TF Hub / Kaggle ALBERT,
`albert_en_base/3`), a Model Garden TF2 checkpoint, or a TF1 checkpoint prefix, file or folder
(Google). `--albert_config_file` is needed only where the input carries no config (TF1,
`.weights.h5`, a Model Garden checkpoint); an `albert_config.json` beside the input is used.
Without `--output_format`, an output ending in `.weights.h5`/`.keras` is Keras, one ending in
`.onnx` ONNX (the model the input holds, as `albert_tf.export_onnx` writes it; needs the
`deploy` extra), anything else a TF1 checkpoint prefix. `--spm_model_file` may be a `.model`
file or a TF Hub folder holding one (`albert_en_preprocess/3` included). The load report of the
input is printed, then what was written; heads the input lacks are left out of the output,
never written untrained.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from albert_tf.core import environment
from albert_tf.core.errors import AlbertError
from albert_tf.drivers import console
from albert_tf.drivers.cli import one_line
from albert_tf.drivers.flag_words import in_flag_words
from albert_tf.interop.model_files import FORMATS, UNTRAINED_LEFT_OUT, convert_model
from albert_tf.modeling.model_kinds import MODEL_KINDS

# convert_model's arguments as this command's flags, for what it reports
FLAG_NAMES = {
    "input_path": "--input",
    "output_path": "--output",
    "output_format": "--output_format",
    "albert_config_file": "--albert_config_file",
    "model_kind": "--model",
    "allow_missing": "--allow_missing",
    "spm_model_file": "--spm_model_file",
}


def _parser():
    """The command line's arguments."""
    parser = argparse.ArgumentParser(
        prog="python -m albert_tf.convert",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--input",
        required=True,
        help="TF1 or Model Garden checkpoint prefix/dir, .weights.h5, .keras, keras-hub preset, "
        "HF folder or TF Hub SavedModel folder",
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
        help="needed only for inputs that carry no config (TF1, .weights.h5, Model Garden)",
    )
    parser.add_argument(
        "--model",
        choices=MODEL_KINDS,
        default=None,
        help="what to build; default: what the input holds (a driver run's fine-tuned model "
        "with its head, named by its run_summary.json; a release's pretrainer); encoder keeps "
        "the AlbertModel only; a fine-tuned TF1 checkpoint outside its run folder needs one "
        "of classifier, regression, multi_label, token_classifier, multiple_choice",
    )
    parser.add_argument(
        "--allow_missing",
        action="store_true",
        help="write even when the input lacks variables of the model (they would be random; "
        "the report lists them) or the output format has no place for a head",
    )
    parser.add_argument(
        "--verbose_errors",
        action="store_true",
        help="show TensorFlow's start-up lines and tracebacks",
    )
    parser.add_argument(
        "--spm_model_file",
        default=None,
        help="SentencePiece model for keras_hub/huggingface/tfhub outputs: a .model file or a "
        "TF Hub folder holding one (default: the one in the input's folder)",
    )
    return parser


def main(argv=None):
    """Runs the converter on `argv` (default: the command line); returns the exit code."""
    args = _parser().parse_args(argv)
    if not args.verbose_errors:
        console.import_tensorflow_quietly()
    written = []
    try:
        report = convert_model(
            args.input,
            args.output,
            args.output_format,
            albert_config_file=args.albert_config_file,
            model_kind=args.model,
            spm_model_file=args.spm_model_file,
            allow_missing=args.allow_missing,
            log=written.append,
        )
    except (ValueError, FileNotFoundError, TypeError, KeyError, ImportError, AlbertError) as e:
        if args.verbose_errors:  # the trace, then the environment block, as every driver's
            traceback.print_exc()
            print(environment.short_block(), file=sys.stderr)
        print(f"error: {one_line(in_flag_words(e, FLAG_NAMES))}", file=sys.stderr)
        return 2
    # what the input lacks is said once: by the line of what the output left out, if any
    print(report.summary(not any(line.startswith(UNTRAINED_LEFT_OUT) for line in written)))
    print(in_flag_words("\n".join(written), FLAG_NAMES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
