"""Fine-tune ALBERT for named-entity recognition (token classification) on CoNLL-2003-style
files (`word label` or `word POS chunk label` per line, a blank line between sentences; BIO or
BIOES tags): train, evaluate with entity-level F1 (seqeval's), predict a label per word,
export a raw-text SavedModel (text → a label per word)."""

from absl import flags

from albert_tf.drivers import cli, validation
from albert_tf.drivers.exports import exporter_from_flags
from albert_tf.drivers.flags import define_finetuning_flags, options_from_flags
from albert_tf.drivers.ner import preload_ner, task_labels, validate_ner
from albert_tf.drivers.recipes import apply_recipe
from albert_tf.text.encoding import TextEncoder

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "Folder holding train.txt, dev.txt (or valid.txt), test.txt.")
flags.DEFINE_string("train_file", None, "The train file (default: data_dir/train.txt).")
flags.DEFINE_string("dev_file", None, "The dev file (default: data_dir/dev.txt or valid.txt).")
flags.DEFINE_string(
    "test_file", None, "The test file (default: data_dir/test.txt); labels optional."
)
flags.DEFINE_string(
    "label_list",
    None,
    "Comma-separated labels (default: the train file's, or "
    "labels.json of the run in --output_dir).",
)
flags.DEFINE_string("label_scheme", None, "BIO or BIOES (default: from the labels).")
flags.DEFINE_float("dropout_prob", 0.1, "Dropout on the sequence output before the classifier.")
define_finetuning_flags(max_seq_length=128, learning_rate=5e-5, train_step=1000, warmup_step=100)

USAGE = cli.Usage(
    """Fine-tune ALBERT for named-entity recognition on CoNLL-2003-style files (BIO / BIOES).

usage: python run_ner.py --data_dir=DIR (or --train_file/--dev_file/--test_file)
         --albert_config_file=FILE --spm_model_file=FILE --output_dir=DIR
         [--init_checkpoint=CKPT] [--do_train] [--do_eval] [--do_predict] [--export_dir=DIR]
required: --albert_config_file, --output_dir, --spm_model_file or --vocab_file, and the data
          (--data_dir, or the split files)

example, Google's albert_base_v2 release on CoNLL-2003:
  python run_ner.py --data_dir=conll2003 --albert_config_file=albert_base/albert_config.json \\
      --init_checkpoint=albert_base/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \\
      --output_dir=runs/ner --do_train --do_eval --do_predict

try it in a clone of albert_tf (a tiny model and a data sample that ship with it):
  python run_ner.py --train_file=tests/data/samples/ner/conll2003_bio.txt \\
      --dev_file=tests/data/samples/ner/conll2003_bio.txt \\
      --albert_config_file=tests/data/fixtures/albert_tiny/albert_config.json \\
      --init_checkpoint=tests/data/fixtures/albert_tiny/model.ckpt-best \\
      --spm_model_file=tests/data/fixtures/albert_tiny/30k-clean.model \\
      --output_dir=/tmp/albert_tf_try/ner --do_train --do_eval --train_step=20 --max_seq_length=64
""",
    required=("albert_config_file", "output_dir"),
    one_of=(("spm_model_file", "vocab_file"),),
    modules=("albert_tf.drivers.flags",),
)


def main(argv):
    del argv
    apply_recipe(FLAGS, "run_ner.py")  # no recipe is for it: --recipe is one error line
    # the strategy first: MultiWorkerMirroredStrategy must precede any other TF op
    strategy = validation.strategy_from_flags(FLAGS, "train_batch_size")
    config = validate_ner(FLAGS)
    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.engine.finetuning import run_finetuning  # deferred: as above

    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.tasks.ner.serving import export_token_classifier

    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.tasks.ner.task import NerFiles, NerTask, ner_model_fn

    opts = options_from_flags(FLAGS)
    encoder = TextEncoder.from_files(FLAGS.spm_model_file, FLAGS.vocab_file, FLAGS.do_lower_case)
    files = NerFiles.find(
        FLAGS.data_dir, train=FLAGS.train_file, dev=FLAGS.dev_file, test=FLAGS.test_file
    )
    labels, scheme = task_labels(FLAGS)
    task = NerTask(
        files, encoder, FLAGS.max_seq_length, FLAGS.cached_dir or FLAGS.output_dir, labels, scheme
    )
    preload_ner(task, FLAGS)
    if FLAGS.do_train:
        task.save_labels(FLAGS.output_dir)
    run_finetuning(
        task,
        ner_model_fn(config, task, FLAGS.dropout_prob),
        opts,
        strategy,
        do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval,
        do_predict=FLAGS.do_predict,
        export_fn=exporter_from_flags(export_token_classifier, task, FLAGS),
    )


if __name__ == "__main__":
    cli.run(main, usage=USAGE)
