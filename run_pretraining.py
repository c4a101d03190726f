"""Pretrain ALBERT (MLM + SOP) on TFRecords from create_pretraining_data.py.

With no flags, runs the demo: a small ALBERT pretrained for a few minutes on English text that
ships with Python (pydoc_data.topics). Flags keep the names and defaults of Google's script.
"""

from absl import flags

from albert_tf.engine import validation
from albert_tf.engine.distribution_flags import define_distribution_flags
from albert_tf.pretraining.validate import validate_pretraining

FLAGS = flags.FLAGS
flags.DEFINE_string("albert_config_file", None, "albert_config.json of the model to pretrain.")
flags.DEFINE_string("input_file", None, "Input TFRecord files (comma-separated, globs allowed).")
flags.DEFINE_string("eval_input_file", None, "TFRecords for --do_eval (default: --input_file).")
flags.DEFINE_string("output_dir", None, "Where checkpoints, summaries and results are written.")
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (Google TF1 or albert_tf).")
flags.DEFINE_integer("max_seq_length", 512, "Sequence length of the TFRecords.")
flags.DEFINE_integer(
    "max_predictions_per_seq", 20, "Masked positions per sequence in the TFRecords."
)
flags.DEFINE_bool("do_train", True, "Whether to train.")
flags.DEFINE_bool("do_eval", False, "Whether to evaluate (each checkpoint when training).")
flags.DEFINE_integer("train_batch_size", 4096, "Global training batch size.")
flags.DEFINE_integer("eval_batch_size", 64, "Global evaluation batch size.")
flags.DEFINE_enum("optimizer", "lamb", ["lamb", "adamw"], "Optimizer.")
flags.DEFINE_float("learning_rate", 0.00176, "Peak learning rate.")
flags.DEFINE_float("poly_power", 1.0, "Power of the polynomial decay.")
flags.DEFINE_integer("num_train_steps", 125000, "Optimizer steps.")
flags.DEFINE_integer("num_warmup_steps", 3125, "Linear warmup steps.")
flags.DEFINE_integer("start_warmup_step", 0, "Step at which warmup starts.")
flags.DEFINE_integer("save_checkpoints_steps", 5000, "Steps between checkpoints (and evaluations).")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept.")
flags.DEFINE_integer(
    "iterations_per_loop", 1000, "Steps per host loop (Keras steps_per_execution)."
)
flags.DEFINE_integer("max_eval_steps", 100, "Maximum evaluation batches.")
flags.DEFINE_bool(
    "init_from_group0", False, "Initialise every group from group 0 of --init_checkpoint."
)
flags.DEFINE_bool("bias_correction", False, "Adam bias correction (Google's optimizers have none).")
flags.DEFINE_integer("log_every_steps", 100, "Steps between steps/s log lines and summaries.")
flags.DEFINE_integer("seed", None, "Seed of the input shuffling.")
define_distribution_flags()


def main(argv):
    del argv
    if FLAGS.albert_config_file is None and FLAGS.input_file is None:
        # deferred: flags are parsed and checked before TensorFlow loads
        from albert_tf.pretraining.demo import run_demo

        run_demo(output_dir=FLAGS.output_dir or "demo_output")
        return
    # the strategy first: MultiWorkerMirroredStrategy must precede any other TF op
    strategy = validation.strategy_from_flags(FLAGS, "train_batch_size", "eval_batch_size")
    config = validate_pretraining(FLAGS)
    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.pretraining.pretrain import PretrainingOptions, pretrain

    opts = PretrainingOptions(
        **{
            f: FLAGS[f].value
            for f in PretrainingOptions.__dataclass_fields__
            if f in FLAGS and f != "verbose"
        }
    )
    pretrain(config, opts, strategy)


if __name__ == "__main__":
    from albert_tf.engine import cli

    cli.run(main)
