"""absl flags shared by run_classifier.py, run_squad.py and run_race.py (Google's names), defined
once here; each driver passes its own defaults."""

from absl import flags

from albert_tf.core.errors import InputError
from albert_tf.deploy.export_formats import EXPORT_FORMATS, QUANTIZE_MODES
from albert_tf.drivers.distribution_flags import define_distribution_flags
from albert_tf.engine.finetuning_options import FineTuningOptions

COMMON_DEFAULTS = dict(
    train_batch_size=32,
    eval_batch_size=8,
    predict_batch_size=8,
    learning_rate=5e-5,
    train_step=1000,
    warmup_step=0,
    save_checkpoints_steps=1000,
    keep_checkpoint_max=5,
    optimizer="adamw",
    iterations_per_loop=1,
    max_seq_length=512,
    do_lower_case=True,
)


def define_finetuning_flags(**defaults):
    """Defines the fine-tuning drivers' shared absl flags, with Google's names.

    Args:
        **defaults: A driver's own defaults for any flag of `COMMON_DEFAULTS` (and `do_train`,
            `do_eval`), e.g. `max_seq_length=384` for SQuAD.
    """
    d = {**COMMON_DEFAULTS, **defaults}
    _define_file_flags()
    _define_run_flags(d)
    _define_performance_flags()
    define_distribution_flags()


def _define_file_flags():
    """The model, tokenizer and output files."""
    flags.DEFINE_string("albert_config_file", None, "albert_config.json of the pretrained model.")
    flags.DEFINE_string("init_checkpoint", None, "Pretrained checkpoint (Google TF1 or albert_tf).")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model (30k-clean.model).")
    flags.DEFINE_string(
        "vocab_file", None, "WordPiece vocab (the Chinese releases), instead of an spm model."
    )
    flags.DEFINE_string("output_dir", None, "Checkpoints, results and predictions go here.")
    flags.DEFINE_string(
        "cached_dir", None, "Where feature TFRecords are cached (default: output_dir)."
    )
    flags.DEFINE_string(
        "export_dir",
        None,
        "Write a SavedModel that takes raw text to a new "
        "version folder export_dir/<unix seconds> (TF Serving's layout; needs "
        "--spm_model_file or --vocab_file; albert_tf.load_saved_model(export_dir) "
        "loads the newest).",
    )
    flags.DEFINE_string(
        "export_format",
        "saved_model",
        "What --export_dir's new version folder holds, a comma list of "
        f"{', '.join(EXPORT_FORMATS)}: the raw-text SavedModel (TF Serving), a LiteRT "
        "model.tflite (fixed "
        "[1, max_seq_length] inputs; TFLite Task Library metadata for classifiers and SQuAD "
        "v1.1 at 384), model.onnx. README.md says how to load each (docs/deployment.md).",
    )
    flags.DEFINE_string(
        "quantize",
        "none",
        f"The LiteRT file's quantization, one of {', '.join(QUANTIZE_MODES)} (int8: full "
        "integer, calibrated on 100 train records); a quantized export is measured on dev "
        "against the float32 model (quantization_report.json beside it).",
    )


def _define_run_flags(d):
    """What the run does, its lengths, batches and schedule."""
    flags.DEFINE_bool("do_lower_case", d["do_lower_case"], "Lowercase the input text.")
    flags.DEFINE_integer("max_seq_length", d["max_seq_length"], "Total input length in pieces.")
    flags.DEFINE_bool("do_train", d.get("do_train", False), "Whether to train.")
    flags.DEFINE_bool("do_eval", d.get("do_eval", False), "Whether to evaluate on dev.")
    flags.DEFINE_bool("do_predict", False, "Whether to predict the test set.")
    flags.DEFINE_integer("train_batch_size", d["train_batch_size"], "Global training batch size.")
    flags.DEFINE_integer("eval_batch_size", d["eval_batch_size"], "Evaluation batch size.")
    flags.DEFINE_integer("predict_batch_size", d["predict_batch_size"], "Prediction batch size.")
    flags.DEFINE_float("learning_rate", d["learning_rate"], "Peak learning rate.")
    flags.DEFINE_integer("train_step", d["train_step"], "Optimizer steps.")
    flags.DEFINE_integer("warmup_step", d["warmup_step"], "Linear warmup steps.")
    flags.DEFINE_integer(
        "save_checkpoints_steps",
        d["save_checkpoints_steps"],
        "Steps between checkpoints; each one is evaluated when --do_eval.",
    )
    flags.DEFINE_integer("keep_checkpoint_max", d["keep_checkpoint_max"], "Checkpoints kept.")
    flags.DEFINE_enum("optimizer", d["optimizer"], ["adamw", "lamb"], "Optimizer.")
    flags.DEFINE_integer(
        "iterations_per_loop",
        d["iterations_per_loop"],
        "Steps per host loop (Keras steps_per_execution).",
    )
    flags.DEFINE_integer("log_every_steps", 100, "Steps between steps/s log lines.")
    flags.DEFINE_integer("seed", 12345, "Seed of the training-data shuffle.")


def _define_performance_flags():
    """Recipes, dropout and the speed flags (bucketing, padding-free encoding)."""
    flags.DEFINE_string(
        "recipe",
        None,
        "A task's published fine-tuning hyperparameters (the ALBERT paper's Table "
        "14: learning rate, batch size, steps, warmup, sequence length, dropouts; "
        "docs/training.md), e.g. mnli, squad_v2, race; flags given explicitly win, "
        "and the values used are logged.",
    )
    flags.DEFINE_float(
        "albert_dropout_prob",
        None,
        "The encoder's dropout (hidden and attention; the paper's \"ALBERT DR\"), "
        "instead of the config's.",
    )
    flags.DEFINE_bool(
        "bucket_by_length",
        True,
        "Cut each batch to the smallest of a fixed set of lengths (16, 32, 48, 64, 96, ... "
        "max_seq_length) that holds its records; --nobucket_by_length keeps "
        "Google's max_seq_length batches. Eval/predict results are the same. With "
        "--use_tpu (or --strategy_type=tpu) the set is max_seq_length/4, /2 and "
        "max_seq_length: every shape is one XLA compile on a TPU, so training "
        "compiles at most 3 shapes (1 with --nobucket_by_length).",
    )
    flags.DEFINE_bool(
        "padding_free",
        True,
        "Run the encoder's row-wise work (Dense layers, GELU, LayerNorm) on the real "
        "tokens only, not on padding (off under XLA / TPU, which need static "
        "shapes); --nopadding_free computes padded positions as Google's code did. "
        "Real positions' outputs are the same.",
    )


def options_from_flags(FLAGS) -> FineTuningOptions:
    """FineTuningOptions from the shared flags; required flags checked with one clear error."""
    for name in ("albert_config_file", "output_dir"):
        if not FLAGS[name].value:
            raise InputError(f"--{name} is required")
    if not (FLAGS.spm_model_file or FLAGS.vocab_file):
        raise InputError("one of --spm_model_file or --vocab_file is required")
    names = [f for f in FineTuningOptions.__dataclass_fields__ if f in FLAGS and f != "verbose"]
    on_tpu = bool(FLAGS.use_tpu) or FLAGS.strategy_type == "tpu"
    return FineTuningOptions(**{f: FLAGS[f].value for f in names}, tpu_buckets=on_tpu)
