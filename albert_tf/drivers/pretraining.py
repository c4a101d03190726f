"""run_pretraining.py's and create_pretraining_data.py's checks, run before any work:
flags, files, and the TFRecords' feature shapes against the flags."""

from __future__ import annotations

import re

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.drivers import validation as v
from albert_tf.pretraining.documents import expand_input_files, split_output_files

_GLOB_MAGIC = re.compile(r"[*?[]")


def validate_pretraining(FLAGS):
    """run_pretraining.py's flags and its TFRecords' feature shapes; returns the AlbertConfig."""
    v.require(
        FLAGS,
        "albert_config_file",
        "input_file",
        "output_dir",
        why=" (or give no flags at all to run the demo)",
    )
    if not (FLAGS.do_train or FLAGS.do_eval):
        raise InputError("nothing to do: --do_train and --do_eval are both false")
    v.check_at_least(
        FLAGS,
        1,
        "train_batch_size",
        "eval_batch_size",
        "num_train_steps",
        "save_checkpoints_steps",
        "keep_checkpoint_max",
        "iterations_per_loop",
        "max_eval_steps",
        "log_every_steps",
        "max_predictions_per_seq",
        "gradient_accumulation_steps",
    )
    v.check_at_least(FLAGS, 0, "num_warmup_steps", "start_warmup_step")
    v.check_positive_float(FLAGS, "learning_rate", "poly_power")
    v.check_divides(
        FLAGS,
        "train_batch_size",
        FLAGS.gradient_accumulation_steps,
        "--gradient_accumulation_steps",
    )
    if FLAGS.max_predictions_per_seq > FLAGS.max_seq_length:
        raise InputError(
            f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq} exceeds "
            f"--max_seq_length={FLAGS.max_seq_length}"
        )
    v.check_output_dir("output_dir", FLAGS.output_dir)
    config = v.config_from_flags(FLAGS)
    v.check_seq_length(FLAGS, config)
    for flag in ("input_file", "eval_input_file"):
        if FLAGS[flag].value:
            check_pretraining_records(
                flag,
                FLAGS[flag].value,
                FLAGS.max_seq_length,
                FLAGS.max_predictions_per_seq,
                config.vocab_size,
            )
    v.check_checkpoint(
        "init_checkpoint", FLAGS.init_checkpoint, config, group0_fallback=FLAGS.init_from_group0
    )
    if not FLAGS.do_train:
        v.check_has_checkpoint(FLAGS, "for --do_eval without --do_train")
    if FLAGS.do_eval:
        check_one_eval_batch(FLAGS)
    return config


def expand_record_files(flag, spec):
    """Comma-separated paths or globs (any filesystem: gs://...) → files; a pattern matching
    nothing is an InputError."""
    files = []
    for pattern in (p.strip() for p in spec.split(",")):
        if not pattern:
            continue
        matched = fileio.glob(pattern) if _GLOB_MAGIC.search(pattern) else [pattern]
        if not matched or not fileio.exists(matched[0]):
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
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.pretraining.input import pretraining_feature_spec

    want = pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    for path in expand_record_files(flag, spec):
        features = _first_example(flag, path)
        for name, (_, length) in want.items():
            if name not in features:
                raise InputError(
                    f"{path}: record 1 has no feature {name!r}; it is not a "
                    f"pretraining TFRecord (given by --{flag})"
                )
            got = len(features[name])
            if got != length:
                which = "max_seq_length" if length == max_seq_length else "max_predictions_per_seq"
                raise InputError(
                    f"{path}: feature {name!r} has length {got}, but --{which} "
                    f"asks for {length}; pass the value the file was built with"
                )
        top = max(features["input_ids"] + features["masked_lm_ids"])
        if top >= vocab_size:
            raise InputError(
                f"{path}: record 1 has token id {top}, beyond the ALBERT config's "
                f"vocab_size {vocab_size}: built with another tokenizer"
            )


def check_one_eval_batch(FLAGS):
    """--do_eval reads whole batches of --eval_batch_size only (static shapes): records fewer
    than one batch would evaluate nothing, after all the training."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.pretraining.input import count_records

    flag = "eval_input_file" if FLAGS.eval_input_file else "input_file"
    have = count_records(FLAGS[flag].value, FLAGS.eval_batch_size)
    if have < FLAGS.eval_batch_size:
        raise InputError(
            f"--eval_batch_size={FLAGS.eval_batch_size} is more than the {have} records of "
            f"--{flag}: --do_eval reads whole batches only, so it would score none; lower "
            "--eval_batch_size"
        )


def _first_example(flag, path) -> dict:
    """name → list of values of the first tf.train.Example in a TFRecord file."""
    # deferred: keeps TensorFlow off this module's import
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
        raise InputError(
            f"--{flag}: {path} is not a readable TFRecord file of tf.Examples "
            f"({type(e).__name__}: {detail[:120]})"
        ) from None
    out = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        out[name] = list(getattr(feature, kind).value) if kind else []
    return out


def validate_pretraining_data(FLAGS):
    """create_pretraining_data.py's flags, inputs (existing, non-empty UTF-8 text) and outputs.
    Returns the input files."""
    v.require(FLAGS, "input_file", "output_file")
    v.check_tokenizer(FLAGS)
    v.check_at_least(FLAGS, 5, "max_seq_length")
    v.check_at_least(
        FLAGS,
        1,
        "max_predictions_per_seq",
        "dupe_factor",
        "ngram",
        "num_workers",
        "shuffle_buffer_size",
    )
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
        if fileio.abspath(path) in {fileio.abspath(p) for p in inputs}:
            raise InputError(f"--output_file: {path} is also an input file")
    if FLAGS.one_output_per_input and len(outputs) != len(inputs):
        raise InputError(
            f"--one_output_per_input needs one --output_file per input: "
            f"{len(inputs)} inputs, {len(outputs)} outputs"
        )
    return inputs
