"""run_ner.py's checks, run before any work: flags, the CoNLL files of every split the run
reads (columns, tags of the scheme, labels in the label set), the label list."""

from __future__ import annotations

from albert_tf.core.errors import InputError
from albert_tf.drivers import validation as v
from albert_tf.drivers.exports import check_export_flags
from albert_tf.tasks.ner import conll


def validate_ner(FLAGS):
    """run_ner.py's flags and files."""
    if not (FLAGS.data_dir or FLAGS.train_file or FLAGS.dev_file or FLAGS.test_file):
        raise InputError(
            "give --data_dir (with train.txt, dev.txt, test.txt) or --train_file / "
            "--dev_file / --test_file"
        )
    if FLAGS.data_dir:
        v.check_dir("data_dir", FLAGS.data_dir, "NER data folder")
    if FLAGS.do_train and not FLAGS.train_file:
        # deferred: keeps TensorFlow off this module's import
        from albert_tf.tasks.ner.task import SPLIT_FILES, NerFiles

        if NerFiles.find(FLAGS.data_dir).train is None:
            where = (
                f"--data_dir {FLAGS.data_dir} has no" if FLAGS.data_dir else "no --data_dir with"
            )
            raise InputError(
                f"--do_train: no train file: {where} {SPLIT_FILES['train'][0]}; put it there "
                "or give --train_file"
            )
    for split in ("train", "dev", "test"):
        if FLAGS[f"{split}_file"].value:
            v.check_file(f"{split}_file", FLAGS[f"{split}_file"].value, "CoNLL file")
    if FLAGS.label_scheme and FLAGS.label_scheme not in conll.SCHEMES:
        raise InputError(
            f"--label_scheme={FLAGS.label_scheme}: use one of {', '.join(conll.SCHEMES)}"
        )
    v.check_dropout(FLAGS)
    config = v.validate_finetuning(FLAGS)
    check_export_flags(FLAGS)
    return config


def task_labels(FLAGS):
    """(labels, scheme) given by --label_list, else saved by an earlier run in --output_dir,
    else None (read from the train file)."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.tasks.ner.task import read_labels

    if FLAGS.label_list:
        labels = [x.strip() for x in FLAGS.label_list.split(",") if x.strip()]
        if "O" not in labels:
            raise InputError(f"--label_list={FLAGS.label_list}: it needs the outside label 'O'")
        return ["O"] + [x for x in labels if x != "O"], FLAGS.label_scheme or conll.label_scheme(
            labels
        )
    if not FLAGS.do_train:
        labels, scheme = read_labels(FLAGS.output_dir)
        if labels is None:
            raise InputError(
                f"--do_train is off and --output_dir {FLAGS.output_dir} holds no "
                "labels.json of a training run: give --label_list"
            )
        return labels, scheme
    return None, FLAGS.label_scheme


def preload_ner(task, FLAGS):
    """Read and check every split the run needs now: one error naming file and line."""
    splits = (
        (["train"] if FLAGS.do_train else [])
        + (["dev"] if FLAGS.do_eval else [])
        + (["test"] if FLAGS.do_predict else [])
    )
    for split in splits:
        task.check_labels(split)
