"""Fine-tune ALBERT on SQuAD v1.1, or v2.0 with --version_2_with_negative (Google's flags)."""

import math
import os

from absl import flags

from albert_tf.drivers import cli, validation
from albert_tf.drivers.exports import exporter_from_flags
from albert_tf.drivers.flags import define_finetuning_flags, options_from_flags
from albert_tf.drivers.recipes import apply_recipe
from albert_tf.drivers.squad import preload_squad, validate_squad
from albert_tf.text.tokenization import FullTokenizer

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "train_file", None, "SQuAD json for training (train-v1.1.json / train-v2.0.json)."
)
flags.DEFINE_string("predict_file", None, "SQuAD json for evaluation / prediction (dev-*.json).")
flags.DEFINE_string(
    "train_feature_file", None, "Google's cache path; its folder is used as the feature cache."
)
flags.DEFINE_string(
    "predict_feature_file", None, "Google's cache path; its folder is used as the feature cache."
)
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD v2.0 (unanswerable questions).")
flags.DEFINE_integer("doc_stride", 128, "Stride between paragraph windows.")
flags.DEFINE_integer("max_query_length", 64, "Question pieces kept.")
flags.DEFINE_integer("n_best_size", 20, "Candidates per question in nbest_predictions.json.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer in pieces.")
flags.DEFINE_integer("start_n_top", 5, "v2 beam: start candidates.")
flags.DEFINE_integer("end_n_top", 5, "v2 beam: end candidates per start.")
flags.DEFINE_float("dropout_prob", 0.1, "v2 answer-class dropout.")
flags.DEFINE_float("num_train_epochs", 3.0, "Epochs, when --train_step is not given.")
flags.DEFINE_float("warmup_proportion", 0.1, "Warmup fraction, when --warmup_step is not given.")
define_finetuning_flags(
    max_seq_length=384, train_batch_size=32, learning_rate=5e-5, train_step=None, warmup_step=None
)

USAGE = cli.Usage(
    """Fine-tune ALBERT on SQuAD v1.1, or v2.0 with --version_2_with_negative; predict, export.

usage: python run_squad.py --albert_config_file=FILE --spm_model_file=FILE --output_dir=DIR
         [--init_checkpoint=CKPT] [--do_train --train_file=train-v1.1.json]
         [--do_predict --predict_file=dev-v1.1.json] [--version_2_with_negative] [--export_dir=DIR]
required: --albert_config_file, --output_dir, --spm_model_file or --vocab_file; --train_file
          with --do_train, --predict_file with --do_eval / --do_predict

example, Google's albert_base_v2 release on SQuAD v1.1:
  python run_squad.py --train_file=train-v1.1.json --predict_file=dev-v1.1.json \\
      --albert_config_file=albert_base/albert_config.json --recipe=squad_v1 \\
      --init_checkpoint=albert_base/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \\
      --output_dir=runs/squad --do_train --do_predict

try it in a clone of albert_tf (a tiny model and a data sample that ship with it):
  python run_squad.py --train_file=tests/data/samples/squad/v1.1/squad.json \\
      --predict_file=tests/data/samples/squad/v1.1/squad.json \\
      --albert_config_file=tests/data/fixtures/albert_tiny/albert_config.json \\
      --init_checkpoint=tests/data/fixtures/albert_tiny/model.ckpt-best \\
      --spm_model_file=tests/data/fixtures/albert_tiny/30k-clean.model \\
      --output_dir=/tmp/albert_tf_try/squad --do_train --do_predict --train_step=10 \\
      --max_seq_length=64 --doc_stride=32 --max_query_length=16
""",
    required=("albert_config_file", "output_dir"),
    one_of=(("spm_model_file", "vocab_file"),),
    modules=("albert_tf.drivers.flags",),
)


def main(argv):
    del argv
    apply_recipe(FLAGS, "run_squad.py")  # before the checks: they see the recipe's values
    # the strategy first: MultiWorkerMirroredStrategy must precede any other TF op
    strategy = validation.strategy_from_flags(FLAGS, "train_batch_size")
    config = validate_squad(FLAGS)
    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.engine.finetuning import run_finetuning

    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.tasks.squad.task import SquadSettings, SquadTask, squad_model_fn

    preload_squad(FLAGS)
    cache = (
        FLAGS.cached_dir
        or os.path.dirname(FLAGS.train_feature_file or FLAGS.predict_feature_file or "")
        or FLAGS.output_dir
    )
    settings = SquadSettings(
        FLAGS.version_2_with_negative,
        FLAGS.max_seq_length,
        FLAGS.doc_stride,
        FLAGS.max_query_length,
        FLAGS.n_best_size,
        FLAGS.max_answer_length,
        FLAGS.start_n_top,
        FLAGS.end_n_top,
        FLAGS.do_lower_case,
    )
    tokenizer = FullTokenizer(
        spm_model_file=FLAGS.spm_model_file,
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
    )
    task = SquadTask(
        settings,
        tokenizer,
        FLAGS.spm_model_file,
        cache,
        FLAGS.train_file,
        FLAGS.predict_file,
        vocab_file=FLAGS.vocab_file,
    )
    if FLAGS.do_train and (FLAGS.train_step is None or FLAGS.warmup_step is None):
        _, n = task.records("train")  # Google: steps = features / batch × epochs
        steps = FLAGS.train_step or max(
            1, math.ceil(n / FLAGS.train_batch_size * FLAGS.num_train_epochs)
        )
        FLAGS.train_step = steps
        if FLAGS.warmup_step is None:
            FLAGS.warmup_step = int(steps * FLAGS.warmup_proportion)
    FLAGS.train_step = FLAGS.train_step or 1
    FLAGS.warmup_step = FLAGS.warmup_step or 0
    opts = options_from_flags(FLAGS)
    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.tasks.squad.serving import export_squad  # deferred: as above

    run_finetuning(
        task,
        squad_model_fn(config, settings, FLAGS.dropout_prob),
        opts,
        strategy,
        do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval,
        do_predict=FLAGS.do_predict,
        export_fn=exporter_from_flags(export_squad, task, FLAGS),
    )


if __name__ == "__main__":
    cli.run(main, usage=USAGE)
