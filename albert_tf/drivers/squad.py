"""run_squad.py's checks, run before any work: flags, every length that must fit, the JSON files."""

from __future__ import annotations

from albert_tf.core.errors import InputError
from albert_tf.drivers import validation as v
from albert_tf.drivers.exports import check_export_flags
from albert_tf.tasks.squad.examples import read_squad_examples


def validate_squad(FLAGS):
    """run_squad.py's flags, including every length that must fit max_seq_length."""
    if FLAGS.do_train:
        v.require(FLAGS, "train_file", why=" with --do_train")
        v.check_file("train_file", FLAGS.train_file, "SQuAD JSON file")
    if FLAGS.do_eval or FLAGS.do_predict:
        v.require(FLAGS, "predict_file", why=" with --do_eval / --do_predict")
        v.check_file("predict_file", FLAGS.predict_file, "SQuAD JSON file")
    v.check_at_least(
        FLAGS,
        1,
        "doc_stride",
        "max_query_length",
        "n_best_size",
        "max_answer_length",
        "start_n_top",
        "end_n_top",
    )
    room = FLAGS.max_seq_length - FLAGS.max_query_length - 3  # [CLS] query [SEP] doc [SEP]
    if room < 1:
        raise InputError(
            f"--max_query_length={FLAGS.max_query_length} leaves no room for the "
            f"paragraph in --max_seq_length={FLAGS.max_seq_length}; use at most "
            f"{FLAGS.max_seq_length - 4}"
        )
    if FLAGS.doc_stride > room:
        raise InputError(
            f"--doc_stride={FLAGS.doc_stride} is larger than the {room} paragraph "
            f"pieces a window holds (max_seq_length - max_query_length - 3): pieces "
            f"between windows would never be seen; use at most {room}"
        )
    v.check_positive_float(FLAGS, "num_train_epochs")
    v.check_fraction(FLAGS, "warmup_proportion")
    v.check_dropout(FLAGS)
    config = v.validate_finetuning(FLAGS, train_step_required=False)
    check_export_flags(FLAGS)
    return config


def preload_squad(FLAGS):
    """Parse the SQuAD files the run needs (truncated JSON, missing fields, non-UTF-8)."""
    v2 = FLAGS.version_2_with_negative
    if FLAGS.do_train:
        v.non_empty(
            v.read_data(lambda: read_squad_examples(FLAGS.train_file, True, v2), "train_file"),
            "train_file",
            FLAGS.train_file,
        )
    if FLAGS.do_eval or FLAGS.do_predict:
        v.non_empty(
            v.read_data(lambda: read_squad_examples(FLAGS.predict_file, False, v2), "predict_file"),
            "predict_file",
            FLAGS.predict_file,
        )
