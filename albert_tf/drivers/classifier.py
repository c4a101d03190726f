"""run_classifier.py's checks, run before any work: flags, files and every split the run reads."""

from __future__ import annotations

import functools

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.drivers import validation as v
from albert_tf.drivers.exports import check_export_flags
from albert_tf.tasks.classification import custom

GLUE_TASKS = ("cola", "sst-2", "mrpc", "sts-b", "qqp", "mnli", "qnli", "rte", "wnli")
CUSTOM_ONLY = (
    "train_file",
    "dev_file",
    "test_file",
    "text_a_column",
    "text_b_column",
    "label_column",
    "is_regression",
    "multi_label",
    "label_separator",
)


def validate_classifier(FLAGS):
    """run_classifier.py's flags; returns the AlbertConfig."""
    v.require(FLAGS, "task_name")
    v.check_choice("task_name", FLAGS.task_name.lower(), GLUE_TASKS + ("custom",))
    if FLAGS.task_name.lower() == "custom":
        _check_custom_files(FLAGS)
    else:
        given = [f"--{name}" for name in CUSTOM_ONLY if FLAGS[name].present]
        if given:
            raise InputError(f"{', '.join(given)}: only for --task_name=custom (your own files)")
        v.require(FLAGS, "data_dir")
        v.check_dir("data_dir", FLAGS.data_dir, "GLUE data folder")
    v.check_dropout(FLAGS)
    config = v.validate_finetuning(FLAGS)
    check_export_flags(FLAGS)
    return config


def _needed_splits(FLAGS):
    """The splits --do_train / --do_eval / --do_predict read."""
    return [
        s
        for s, on in (("train", FLAGS.do_train), ("dev", FLAGS.do_eval), ("test", FLAGS.do_predict))
        if on
    ]


def _check_custom_files(FLAGS):
    """Each split the run reads is --<split>_file (an existing .csv/.tsv/.jsonl) or found in
    --data_dir as <split>.csv|.tsv|.jsonl."""
    if FLAGS.data_dir:
        v.check_dir("data_dir", FLAGS.data_dir, "data folder")
    v.require(FLAGS, "text_a_column", "label_column")
    for split in _needed_splits(FLAGS):
        flag = f"{split}_file"
        path = FLAGS[flag].value
        if path:
            v.check_file(flag, path, f"{split} file")
            custom.check_extension(path, flag)
        elif not FLAGS.data_dir:
            raise InputError(
                f"--task_name=custom reads a {split} split: give --{flag} or "
                f"--data_dir holding {split}.csv, {split}.tsv or {split}.jsonl"
            )
        else:
            v.read_data(
                functools.partial(custom.find_split_file, FLAGS.data_dir, split), "data_dir"
            )


def custom_processor(FLAGS):
    """The CustomProcessor of the flags, its label ids settled (train's, or a labels.json in
    --output_dir or beside --init_checkpoint); None for a GLUE task."""
    if FLAGS.task_name.lower() != "custom":
        return None
    files = {s: FLAGS[f"{s}_file"].value for s in custom.SPLITS}
    if FLAGS.multi_label and FLAGS.is_regression:
        raise InputError("--multi_label and --is_regression exclude each other")
    if FLAGS.multi_label and not FLAGS.label_separator:
        raise InputError("--label_separator is empty: give what separates the labels in a cell")
    processor = custom.CustomProcessor(
        files,
        FLAGS.data_dir,
        text_a_column=FLAGS.text_a_column,
        text_b_column=FLAGS.text_b_column or None,
        label_column=FLAGS.label_column,
        is_regression=FLAGS.is_regression,
        multi_label=FLAGS.multi_label,
        label_separator=FLAGS.label_separator,
    )
    v.read_data(
        lambda: custom.settle_labels(
            processor, FLAGS.output_dir, FLAGS.init_checkpoint, FLAGS.do_train
        ),
        "train_file" if FLAGS.train_file else "data_dir",
    )
    return processor


def save_custom_labels(task, FLAGS):
    """A custom run keeps its label ids in --output_dir/labels.json (once its input is good)."""
    if task.task == "custom" and not fileio.isfile(fileio.join(FLAGS.output_dir, "labels.json")):
        task.processor.save_labels(FLAGS.output_dir)


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
        examples = v.read_data(functools.partial(task.examples, split, sub), "data_dir")
        v.non_empty(examples, "data_dir", f"the {sub or task.task} {split} split")
