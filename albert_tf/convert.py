"""Convert ALBERT weights between Google's TF1 checkpoints and Keras formats.

    python -m albert_tf.convert --albert_config_file albert_config.json \
        --input model.ckpt-best --output albert.weights.h5 [--model pretrainer|encoder]

The format of each side follows its name: `*.weights.h5` and `*.keras` are Keras files,
anything else is a TF1 checkpoint prefix with Google's variable names.
"""
import argparse
import os
import sys


def _is_keras(path):
    return path.endswith((".weights.h5", ".keras"))


def build_model(config, kind):
    from albert_tf.modeling.models import AlbertModel, AlbertPretrainer
    return AlbertPretrainer(config) if kind == "pretrainer" else AlbertModel(config)


def convert(albert_config_file, input_path, output_path, model_kind="pretrainer",
            require_encoder=True):
    """Read `input_path` into a model built from the config and write it to `output_path`;
    returns the LoadReport when the input is a TF1 checkpoint."""
    import keras
    from albert_tf.formats.tf1 import load_original_checkpoint, save_original_checkpoint
    from albert_tf.config import AlbertConfig
    config = AlbertConfig.from_json_file(albert_config_file)
    report = None
    if input_path.endswith(".keras"):
        model = keras.models.load_model(input_path)
    else:
        model = build_model(config, model_kind)
        if input_path.endswith(".weights.h5"):
            if not os.path.exists(input_path):
                raise FileNotFoundError(f"Keras weights file not found: {input_path}")
            model.load_weights(input_path)
        else:
            report = load_original_checkpoint(model, input_path, require_encoder=require_encoder)
    if _is_keras(output_path):
        directory = os.path.dirname(os.path.abspath(output_path))
        os.makedirs(directory, exist_ok=True)
        suffix = ".weights.h5" if output_path.endswith(".weights.h5") else ".keras"
        tmp = os.path.join(directory, f".tmp-{os.getpid()}{suffix}")
        try:
            (model.save_weights if suffix == ".weights.h5" else model.save)(tmp)
            os.replace(tmp, output_path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    else:
        save_original_checkpoint(model, output_path)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m albert_tf.convert", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--albert_config_file", required=True)
    parser.add_argument("--input", required=True, help="TF1 checkpoint prefix/dir, .weights.h5 or .keras")
    parser.add_argument("--output", required=True, help="TF1 checkpoint prefix, .weights.h5 or .keras")
    parser.add_argument("--model", choices=("pretrainer", "encoder"), default="pretrainer",
                        help="pretrainer keeps the MLM/SOP heads; encoder is AlbertModel only")
    args = parser.parse_args(argv)
    try:
        report = convert(args.albert_config_file, args.input, args.output, args.model)
    except (ValueError, FileNotFoundError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if report is not None:
        print(report)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
