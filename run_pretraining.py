"""Pretrain ALBERT (MLM + SOP) on TFRecords from create_pretraining_data.py.

With no flags, runs the demo: a small ALBERT pretrained for a few minutes on English text that
ships with Python (pydoc_data.topics). Flags keep the names and defaults of Google's script.
"""

from absl import flags

from albert_tf.drivers import cli, validation
from albert_tf.drivers.distribution_flags import define_distribution_flags
from albert_tf.drivers.pretraining import validate_pretraining

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

USAGE = cli.Usage(
    """Pretrain ALBERT (masked LM + sentence order) on TFRecords from create_pretraining_data.py.

usage: python run_pretraining.py                       (no flags: the demo, a few minutes on CPU)
       python run_pretraining.py --input_file=TFRECORDS --albert_config_file=FILE
         --output_dir=DIR [--do_train] [--do_eval] [--init_checkpoint=CKPT]
required (any flag given): --input_file, --albert_config_file, --output_dir

example, ALBERT-base from scratch on a TPU (Google's recipe: LAMB, batch 4096, 125k steps):
  python run_pretraining.py --input_file='gs://bucket/data/*.tfrecord' \\
      --albert_config_file=albert_base/albert_config.json --output_dir=gs://bucket/albert_base \\
      --max_seq_length=512 --use_tpu --tpu=TPU_NAME

try it in a clone of albert_tf (a tiny model and records that ship with it):
  python run_pretraining.py --input_file=tests/data/fixtures/pretraining.tfrecord \\
      --albert_config_file=tests/data/fixtures/albert_tiny/albert_config.json \\
      --output_dir=/tmp/albert_tf_try/pretrain --max_seq_length=64 \\
      --max_predictions_per_seq=10 --train_batch_size=8 --num_train_steps=20 \\
      --num_warmup_steps=2 --iterations_per_loop=10 --do_eval
""",
    modules=("albert_tf.drivers.distribution_flags",),
)


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
    cli.run(main, usage=USAGE)
