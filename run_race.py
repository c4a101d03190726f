"""Fine-tune ALBERT on RACE multiple-choice reading comprehension (Google's run_race.py flags)."""

from absl import flags

from albert_tf.drivers import cli, validation
from albert_tf.drivers.exports import exporter_from_flags
from albert_tf.drivers.flags import define_finetuning_flags, options_from_flags
from albert_tf.drivers.race import preload_race, validate_race
from albert_tf.drivers.recipes import apply_recipe
from albert_tf.text.encoding import TextEncoder

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "Folder that holds RACE/ ({train,dev,test}/{middle,high}/).")
flags.DEFINE_integer("max_qa_length", 128, "Pieces kept (the last ones) of question + option.")
flags.DEFINE_float("dropout_prob", 0.1, "Dropout on the pooled output before the choice scorer.")
flags.DEFINE_bool("high_only", False, "Only the high-school questions.")
flags.DEFINE_bool("middle_only", False, "Only the middle-school questions.")
define_finetuning_flags(
    learning_rate=1e-5,
    train_step=12000,
    warmup_step=1000,
    save_checkpoints_steps=100,
    do_train=True,
    do_eval=True,
)

USAGE = cli.Usage(
    """Fine-tune ALBERT on RACE multiple-choice reading comprehension; evaluate, predict, export.

usage: python run_race.py --data_dir=RACE --albert_config_file=FILE --spm_model_file=FILE
         --output_dir=DIR [--init_checkpoint=CKPT] [--do_train] [--do_eval] [--do_predict]
required: --data_dir, --albert_config_file, --output_dir, --spm_model_file or --vocab_file

example, Google's albert_base_v2 release on RACE:
  python run_race.py --data_dir=RACE --recipe=race \\
      --albert_config_file=albert_base/albert_config.json \\
      --init_checkpoint=albert_base/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \\
      --output_dir=runs/race

try it in a clone of albert_tf (a tiny model and a data sample that ship with it):
  python run_race.py --data_dir=tests/data/samples/RACE \\
      --albert_config_file=tests/data/fixtures/albert_tiny/albert_config.json \\
      --init_checkpoint=tests/data/fixtures/albert_tiny/model.ckpt-best \\
      --spm_model_file=tests/data/fixtures/albert_tiny/30k-clean.model \\
      --output_dir=/tmp/albert_tf_try/race --train_step=10 --max_seq_length=64 \\
      --max_qa_length=32 --save_checkpoints_steps=10 --train_batch_size=8
""",
    required=("data_dir", "albert_config_file", "output_dir"),
    one_of=(("spm_model_file", "vocab_file"),),
    modules=("albert_tf.drivers.flags",),
)


def main(argv):
    del argv
    apply_recipe(FLAGS, "run_race.py")  # before the checks: they see the recipe's values
    # the strategy first: MultiWorkerMirroredStrategy must precede any other TF op
    strategy = validation.strategy_from_flags(FLAGS, "train_batch_size")
    config = validate_race(FLAGS)
    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.engine.finetuning import run_finetuning

    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.tasks.race.task import RaceTask, race_model_fn

    opts = options_from_flags(FLAGS)
    encoder = TextEncoder.from_files(FLAGS.spm_model_file, FLAGS.vocab_file, FLAGS.do_lower_case)
    task = RaceTask(
        FLAGS.data_dir,
        encoder,
        FLAGS.max_seq_length,
        FLAGS.cached_dir or FLAGS.output_dir,
        FLAGS.max_qa_length,
        FLAGS.high_only,
        FLAGS.middle_only,
    )
    preload_race(task, FLAGS)
    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.tasks.race.serving import export_race  # deferred: as above

    run_finetuning(
        task,
        race_model_fn(config, FLAGS.dropout_prob),
        opts,
        strategy,
        do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval,
        do_predict=FLAGS.do_predict,
        export_fn=exporter_from_flags(export_race, task, FLAGS),
    )


if __name__ == "__main__":
    cli.run(main, usage=USAGE)
