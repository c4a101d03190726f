"""run_classifier.py's checks, run before any work: flags, files and every split the run reads."""
from __future__ import annotations

from albert_tf.engine import validation as v
from albert_tf.tasks.serving import check_export_flags

GLUE_TASKS = ("cola", "sst-2", "mrpc", "sts-b", "qqp", "mnli", "qnli", "rte", "wnli")


def validate_classifier(FLAGS):
    """run_classifier.py's flags; returns the AlbertConfig."""
    v.require(FLAGS, "task_name", "data_dir")
    v.check_choice("task_name", FLAGS.task_name.lower(), GLUE_TASKS)
    v.check_dir("data_dir", FLAGS.data_dir, "GLUE data folder")
    v.check_dropout(FLAGS)
    config = v.validate_finetuning(FLAGS)
    check_export_flags(FLAGS)
    return config


def glue_splits(FLAGS):
    """The (split, task) pairs the flags will read."""
    task = FLAGS.task_name.lower()
    splits = [("train", None)] if FLAGS.do_train else []
    if FLAGS.do_eval:
        splits += [("dev", None)] + ([("dev", "mnli-mm")] if task == "mnli" else [])
    if FLAGS.do_predict:
        splits += [("test", None)] + ([("test", "mnli-mm")] if task == "mnli" else [])
    return splits


def preload_glue(task, FLAGS):
    """Read every split the run needs now (reading checks every row, label and byte)."""
    for split, sub in glue_splits(FLAGS):
        examples = v.read_data(lambda: task.examples(split, sub), "data_dir")
        v.non_empty(examples, "data_dir", f"the {sub or task.task} {split} split")
