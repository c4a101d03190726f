"""run_race.py's checks, run before any work: flags, files and every split the run reads."""

from __future__ import annotations

import functools

from albert_tf.core.errors import InputError
from albert_tf.drivers import validation as v
from albert_tf.drivers.exports import check_export_flags


def validate_race(FLAGS):
    """run_race.py's flags."""
    v.require(FLAGS, "data_dir")
    v.check_dir("data_dir", FLAGS.data_dir, "RACE data folder")
    if FLAGS.high_only and FLAGS.middle_only:
        raise InputError("--high_only and --middle_only exclude each other; give at most one")
    v.check_at_least(FLAGS, 1, "max_qa_length")
    limit = FLAGS.max_seq_length - 4  # [CLS] article [SEP] qa [SEP], one article piece at least
    if FLAGS.max_qa_length > limit:
        raise InputError(
            f"--max_qa_length={FLAGS.max_qa_length} does not fit "
            f"--max_seq_length={FLAGS.max_seq_length} (3 special pieces and one "
            f"article piece); use at most {max(limit, 1)}"
        )
    v.check_dropout(FLAGS)
    config = v.validate_finetuning(FLAGS)
    check_export_flags(FLAGS)
    return config


def preload_race(task, FLAGS):
    """Read every RACE split the run needs now."""
    splits = (
        (["train"] if FLAGS.do_train else [])
        + (["dev"] if FLAGS.do_eval else [])
        + (["test"] if FLAGS.do_predict else [])
    )
    for split in splits:
        v.non_empty(
            v.read_data(functools.partial(task.examples, split), "data_dir"),
            "data_dir",
            f"the RACE {split} split",
        )
