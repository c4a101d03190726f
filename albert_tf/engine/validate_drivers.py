"""`validate_<driver>(FLAGS)`: every check of one driver, run before it does any work, built
from the generic checks in albert_tf/engine/validation.py. Each raises one InputError (exit code 2).

Data files are read here too (rows, labels, UTF-8, JSON), so a bad record stops the run before
any output folder or feature cache exists.
"""
from __future__ import annotations

import glob
import os
import re

from albert_tf.engine import validation as v
from albert_tf.errors import InputError

GLUE_TASKS = ("cola", "sst-2", "mrpc", "sts-b", "qqp", "mnli", "qnli", "rte", "wnli")


# ---- shared by the fine-tuning drivers --------------------------------------------------------
def validate_finetuning(FLAGS, *, train_step_required=True):
    """Flags every fine-tuning driver shares; returns the AlbertConfig."""
    v.require(FLAGS, "albert_config_file", "output_dir")
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict or _flag(FLAGS, "export_dir")):
        raise InputError("nothing to do: give --do_train, --do_eval or --do_predict")
    v.check_at_least(FLAGS, 1, "train_batch_size", "eval_batch_size", "predict_batch_size",
                     "save_checkpoints_steps", "keep_checkpoint_max", "iterations_per_loop",
                     "log_every_steps", "gradient_accumulation_steps")
    v.check_at_least(FLAGS, 1 if train_step_required else 0, "train_step")
    v.check_at_least(FLAGS, 0, "warmup_step")
    if FLAGS.train_step is not None and FLAGS.warmup_step is not None and FLAGS.warmup_step > FLAGS.train_step:
        raise InputError(f"--warmup_step={FLAGS.warmup_step} exceeds --train_step={FLAGS.train_step}")
    v.check_positive_float(FLAGS, "learning_rate")
    v.check_divides(FLAGS, "train_batch_size", FLAGS.gradient_accumulation_steps,
                    "--gradient_accumulation_steps")
    v.check_output_dir("output_dir", FLAGS.output_dir)
    if FLAGS.cached_dir:
        v.check_output_dir("cached_dir", FLAGS.cached_dir)
    config = v.load_config("albert_config_file", FLAGS.albert_config_file)
    v.check_seq_length(FLAGS, config)
    v.check_tokenizer(FLAGS, config)
    v.check_checkpoint("init_checkpoint", FLAGS.init_checkpoint, config)
    if not FLAGS.do_train:
        v.check_has_checkpoint(FLAGS, "to evaluate, predict or export without --do_train")
    return config


def _flag(FLAGS, name):
    return FLAGS[name].value if name in FLAGS else None


def _check_dropout(FLAGS):
    if not 0 <= FLAGS.dropout_prob < 1:
        raise InputError(f"--dropout_prob={FLAGS.dropout_prob}: must be in [0, 1)")


def read_data(read, flag):
    """Run a data reader; its errors (missing file or split, bad row) become InputErrors that
    also name the flag."""
    try:
        examples = read()
    except InputError:
        raise
    except (FileNotFoundError, ValueError, KeyError) as e:
        raise InputError(f"--{flag}: {str(e).strip(chr(34) + chr(39))}") from None
    return examples


def _non_empty(examples, flag, what):
    if not examples:
        raise InputError(f"--{flag}: {what} has no examples")
    return examples


# ---- run_classifier.py -----------------------------------------------------------------------
def validate_classifier(FLAGS):
    """run_classifier.py's flags; returns the AlbertConfig."""
    v.require(FLAGS, "task_name", "data_dir")
    v.check_choice("task_name", FLAGS.task_name.lower(), GLUE_TASKS)
    v.check_dir("data_dir", FLAGS.data_dir, "GLUE data folder")
    _check_dropout(FLAGS)
    config = validate_finetuning(FLAGS)
    if FLAGS.export_dir:
        v.check_output_dir("export_dir", FLAGS.export_dir)
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
        examples = read_data(lambda: task.examples(split, sub), "data_dir")
        _non_empty(examples, "data_dir", f"the {sub or task.task} {split} split")


# ---- run_squad.py ----------------------------------------------------------------------------
def validate_squad(FLAGS):
    """run_squad.py's flags, including every length that must fit max_seq_length."""
    v.require(FLAGS, "spm_model_file", why=": SQuAD maps pieces back to characters")
    if FLAGS.do_train:
        v.require(FLAGS, "train_file", why=" with --do_train")
        v.check_file("train_file", FLAGS.train_file, "SQuAD JSON file")
    if FLAGS.do_eval or FLAGS.do_predict:
        v.require(FLAGS, "predict_file", why=" with --do_eval / --do_predict")
        v.check_file("predict_file", FLAGS.predict_file, "SQuAD JSON file")
    v.check_at_least(FLAGS, 1, "doc_stride", "max_query_length", "n_best_size",
                     "max_answer_length", "start_n_top", "end_n_top")
    room = FLAGS.max_seq_length - FLAGS.max_query_length - 3  # [CLS] query [SEP] doc [SEP]
    if room < 1:
        raise InputError(f"--max_query_length={FLAGS.max_query_length} leaves no room for the "
                         f"paragraph in --max_seq_length={FLAGS.max_seq_length}; use at most "
                         f"{FLAGS.max_seq_length - 4}")
    if FLAGS.doc_stride > room:
        raise InputError(f"--doc_stride={FLAGS.doc_stride} is larger than the {room} paragraph "
                         f"pieces a window holds (max_seq_length - max_query_length - 3): pieces "
                         f"between windows would never be seen; use at most {room}")
    v.check_positive_float(FLAGS, "num_train_epochs")
    v.check_fraction(FLAGS, "warmup_proportion")
    _check_dropout(FLAGS)
    return validate_finetuning(FLAGS, train_step_required=False)


def preload_squad(FLAGS):
    """Parse the SQuAD files the run needs (truncated JSON, missing fields, non-UTF-8)."""
    from albert_tf.tasks.squad import data as squad
    v2 = FLAGS.version_2_with_negative
    if FLAGS.do_train:
        _non_empty(read_data(lambda: squad.read_squad_examples(FLAGS.train_file, True, v2),
                             "train_file"), "train_file", FLAGS.train_file)
    if FLAGS.do_eval or FLAGS.do_predict:
        _non_empty(read_data(lambda: squad.read_squad_examples(FLAGS.predict_file, False, v2),
                             "predict_file"), "predict_file", FLAGS.predict_file)


# ---- run_race.py -----------------------------------------------------------------------------
def validate_race(FLAGS):
    """run_race.py's flags."""
    v.require(FLAGS, "data_dir")
    v.check_dir("data_dir", FLAGS.data_dir, "RACE data folder")
    if FLAGS.high_only and FLAGS.middle_only:
        raise InputError("--high_only and --middle_only exclude each other; give at most one")
    v.check_at_least(FLAGS, 1, "max_qa_length")
    limit = FLAGS.max_seq_length - 4  # [CLS] article [SEP] qa [SEP], one article piece at least
    if FLAGS.max_qa_length > limit:
        raise InputError(f"--max_qa_length={FLAGS.max_qa_length} does not fit "
                         f"--max_seq_length={FLAGS.max_seq_length} (3 special pieces and one "
                         f"article piece); use at most {max(limit, 1)}")
    _check_dropout(FLAGS)
    return validate_finetuning(FLAGS)


def preload_race(task, FLAGS):
    """Read every RACE split the run needs now."""
    splits = (["train"] if FLAGS.do_train else []) + (["dev"] if FLAGS.do_eval else []) + (
        ["test"] if FLAGS.do_predict else [])
    for split in splits:
        _non_empty(read_data(lambda: task.examples(split), "data_dir"), "data_dir",
                   f"the RACE {split} split")


# ---- run_pretraining.py ----------------------------------------------------------------------
def validate_pretraining(FLAGS):
    """run_pretraining.py's flags and its TFRecords' feature shapes; returns the AlbertConfig."""
    v.require(FLAGS, "albert_config_file", "input_file", "output_dir",
              why=" (or give no flags at all to run the demo)")
    if not (FLAGS.do_train or FLAGS.do_eval):
        raise InputError("nothing to do: --do_train and --do_eval are both false")
    v.check_at_least(FLAGS, 1, "train_batch_size", "eval_batch_size", "num_train_steps",
                     "save_checkpoints_steps", "keep_checkpoint_max", "iterations_per_loop",
                     "max_eval_steps", "log_every_steps", "max_predictions_per_seq",
                     "gradient_accumulation_steps")
    v.check_at_least(FLAGS, 0, "num_warmup_steps", "start_warmup_step")
    v.check_positive_float(FLAGS, "learning_rate", "poly_power")
    v.check_divides(FLAGS, "train_batch_size", FLAGS.gradient_accumulation_steps,
                    "--gradient_accumulation_steps")
    if FLAGS.max_predictions_per_seq > FLAGS.max_seq_length:
        raise InputError(f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq} exceeds "
                         f"--max_seq_length={FLAGS.max_seq_length}")
    v.check_output_dir("output_dir", FLAGS.output_dir)
    config = v.load_config("albert_config_file", FLAGS.albert_config_file)
    v.check_seq_length(FLAGS, config)
    for flag in ("input_file", "eval_input_file"):
        if FLAGS[flag].value:
            check_pretraining_records(flag, FLAGS[flag].value, FLAGS.max_seq_length,
                                      FLAGS.max_predictions_per_seq, config.vocab_size)
    v.check_checkpoint("init_checkpoint", FLAGS.init_checkpoint, config,
                       group0_fallback=FLAGS.init_from_group0)
    if not FLAGS.do_train:
        v.check_has_checkpoint(FLAGS, "for --do_eval without --do_train")
    return config


def expand_record_files(flag, spec):
    """Comma-separated paths or globs → files; a pattern matching nothing is an InputError."""
    files = []
    for pattern in (p.strip() for p in spec.split(",")):
        if not pattern:
            continue
        matched = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matched or not os.path.exists(matched[0]):
            raise InputError(f"--{flag}: no file matches {pattern!r}")
        for path in matched:
            v.check_file(flag, path, "TFRecord file")
        files.extend(matched)
    if not files:
        raise InputError(f"--{flag} is empty")
    return files


def check_pretraining_records(flag, spec, max_seq_length, max_predictions_per_seq, vocab_size):
    """The first record of every file must parse and have the lengths the flags say (Google's
    create_pretraining_data.py layout), with ids inside the vocabulary."""
    from albert_tf.pretraining.input import pretraining_feature_spec
    want = pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    for path in expand_record_files(flag, spec):
        features = _first_example(flag, path)
        for name, (_, length) in want.items():
            if name not in features:
                raise InputError(f"{path}: record 1 has no feature {name!r}; it is not a "
                                 f"pretraining TFRecord (given by --{flag})")
            got = len(features[name])
            if got != length:
                which = "max_seq_length" if length == max_seq_length else "max_predictions_per_seq"
                raise InputError(f"{path}: feature {name!r} has length {got}, but --{which} "
                                 f"asks for {length}; pass the value the file was built with")
        top = max(features["input_ids"] + features["masked_lm_ids"])
        if top >= vocab_size:
            raise InputError(f"{path}: record 1 has token id {top}, beyond the ALBERT config's "
                             f"vocab_size {vocab_size}: built with another tokenizer")


def _first_example(flag, path) -> dict:
    """name → list of values of the first tf.train.Example in a TFRecord file."""
    import tensorflow as tf
    try:
        raw = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
        if raw is None:
            raise InputError(f"--{flag}: TFRecord file {path} holds no records")
        example = tf.train.Example.FromString(raw.numpy())
    except (tf.errors.OpError, ValueError) as e:
        if isinstance(e, InputError):
            raise
        detail = re.sub(r"\{\{.*?\}\}\s*", "", getattr(e, "message", str(e))).splitlines()[0]
        raise InputError(f"--{flag}: {path} is not a readable TFRecord file of tf.Examples "
                         f"({type(e).__name__}: {detail[:120]})") from None
    out = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        out[name] = list(getattr(feature, kind).value) if kind else []
    return out


# ---- create_pretraining_data.py --------------------------------------------------------------
def validate_pretraining_data(FLAGS):
    """create_pretraining_data.py's flags, inputs (existing, non-empty UTF-8 text) and outputs.
    Returns the input files."""
    from albert_tf.pretraining.builder import expand_input_files, split_output_files
    v.require(FLAGS, "input_file", "output_file")
    v.check_tokenizer(FLAGS)
    v.check_at_least(FLAGS, 5, "max_seq_length")
    v.check_at_least(FLAGS, 1, "max_predictions_per_seq", "dupe_factor", "ngram", "num_workers",
                     "shuffle_buffer_size")
    v.check_fraction(FLAGS, "masked_lm_prob", low_open=True)
    v.check_fraction(FLAGS, "short_seq_prob")
    try:
        inputs = expand_input_files(FLAGS.input_file)
    except (FileNotFoundError, ValueError) as e:
        raise InputError(f"--input_file: {e}") from None
    for path in inputs:
        if not v.check_utf8("input_file", path):
            raise InputError(f"--input_file: {path} holds only blank lines: no text to build from")
    outputs = split_output_files(FLAGS.output_file)
    for path in outputs:
        v.check_output_file("output_file", path)
        if os.path.abspath(path) in {os.path.abspath(p) for p in inputs}:
            raise InputError(f"--output_file: {path} is also an input file")
    if FLAGS.one_output_per_input and len(outputs) != len(inputs):
        raise InputError(f"--one_output_per_input needs one --output_file per input: "
                         f"{len(inputs)} inputs, {len(outputs)} outputs")
    return inputs
