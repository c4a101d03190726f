"""Fine-tune ALBERT on a GLUE task or your own CSV/TSV/JSONL files (Google's run_classifier.py
flags, plus --task_name=custom and its column flags), evaluate, predict, export."""

from absl import flags

from albert_tf.drivers import cli, validation
from albert_tf.drivers.classifier import (
    custom_processor,
    preload_glue,
    save_custom_labels,
    validate_classifier,
)
from albert_tf.drivers.exports import exporter_from_flags
from albert_tf.drivers.flags import define_finetuning_flags, options_from_flags
from albert_tf.drivers.recipes import apply_recipe
from albert_tf.text.encoding import TextEncoder

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "data_dir",
    None,
    "Folder holding the GLUE task folders (CoLA/, MNLI/, ...), "
    "or, for --task_name=custom, train/dev/test.{csv,tsv,jsonl}.",
)
flags.DEFINE_string(
    "task_name",
    None,
    "GLUE task: cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli; or custom (your own files).",
)
flags.DEFINE_float("dropout_prob", 0.1, "Dropout on the pooled output before the classifier.")
flags.DEFINE_string("train_file", None, "custom: the train file (default: data_dir/train.<ext>).")
flags.DEFINE_string("dev_file", None, "custom: the dev file (default: data_dir/dev.<ext>).")
flags.DEFINE_string("test_file", None, "custom: the test file (default: data_dir/test.<ext>).")
flags.DEFINE_string("text_a_column", "text", "custom: the column (JSONL key) of the text.")
flags.DEFINE_string("text_b_column", None, "custom: the second text's column, for pairs.")
flags.DEFINE_string("label_column", "label", "custom: the label's column.")
flags.DEFINE_bool(
    "is_regression",
    False,
    "custom: labels are numbers to regress on (otherwise each distinct label is a class).",
)
flags.DEFINE_bool(
    "multi_label",
    False,
    "custom: the label column holds several labels (a JSON "
    "list, or names split on --label_separator): a sigmoid per label, binary "
    "cross-entropy, a threshold chosen on dev, micro/macro F1 and exact match.",
)
flags.DEFINE_string(
    "label_separator", ",", "custom, --multi_label: what separates the labels in a CSV/TSV cell."
)
define_finetuning_flags()

USAGE = cli.Usage(
    """Fine-tune ALBERT on a GLUE task or your own CSV/TSV/JSONL files; evaluate, predict, export.

usage: python run_classifier.py --task_name=TASK --data_dir=DIR --albert_config_file=FILE
         --spm_model_file=FILE (or --vocab_file=FILE) --output_dir=DIR [--init_checkpoint=CKPT]
         [--do_train] [--do_eval] [--do_predict] [--export_dir=DIR] [--recipe=TASK]
required: --task_name, --albert_config_file, --output_dir, --spm_model_file or --vocab_file,
          and --data_dir (GLUE) or --train_file/--dev_file/--test_file (--task_name=custom)

example, Google's albert_base_v2 release on MRPC from the GLUE download:
  python run_classifier.py --task_name=MRPC --data_dir=glue_data --recipe=mrpc \\
      --albert_config_file=albert_base/albert_config.json \\
      --init_checkpoint=albert_base/model.ckpt-best --spm_model_file=albert_base/30k-clean.model \\
      --output_dir=runs/mrpc --do_train --do_eval --do_predict

try it in a clone of albert_tf (a tiny model and a data sample that ship with it):
  python run_classifier.py --task_name=MRPC --data_dir=tests/data/samples \\
      --albert_config_file=tests/data/fixtures/albert_tiny/albert_config.json \\
      --init_checkpoint=tests/data/fixtures/albert_tiny/model.ckpt-best \\
      --spm_model_file=tests/data/fixtures/albert_tiny/30k-clean.model \\
      --output_dir=/tmp/albert_tf_try/mrpc --do_train --do_eval --train_step=20 --max_seq_length=64
""",
    required=("task_name", "albert_config_file", "output_dir"),
    one_of=(("spm_model_file", "vocab_file"),),
    modules=("albert_tf.drivers.flags",),
)


def main(argv):
    del argv
    apply_recipe(FLAGS, "run_classifier.py")  # before the checks: they see the recipe's values
    # the strategy first: MultiWorkerMirroredStrategy must precede any other TF op
    strategy = validation.strategy_from_flags(FLAGS, "train_batch_size")
    config = validate_classifier(FLAGS)
    # deferred: flags are parsed and checked before TensorFlow loads
    from albert_tf.tasks.classification.serving import export_text_classifier
    from albert_tf.tasks.glue.task import GlueTask, run_glue  # deferred: as above

    opts = options_from_flags(FLAGS)
    encoder = TextEncoder.from_files(FLAGS.spm_model_file, FLAGS.vocab_file, FLAGS.do_lower_case)
    task = GlueTask(
        FLAGS.task_name,
        FLAGS.data_dir,
        encoder,
        FLAGS.max_seq_length,
        FLAGS.cached_dir or FLAGS.output_dir,
        processor=custom_processor(FLAGS),
    )
    preload_glue(task, FLAGS)
    save_custom_labels(task, FLAGS)
    run_glue(
        config,
        task,
        opts,
        strategy,
        do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval,
        do_predict=FLAGS.do_predict,
        dropout_prob=FLAGS.dropout_prob,
        export_fn=exporter_from_flags(export_text_classifier, task, FLAGS),
    )


if __name__ == "__main__":
    cli.run(main, usage=USAGE)
