"""Checks of every driver's flags, files, config, tokenizer and checkpoint, made in one pass
before any work (no features, models or output folders), each failure one InputError naming
the flag or file at fault and what would fit.

Generic checks and the fine-tuning drivers' shared checks are here; each driver's
`validate_<driver>(FLAGS)` (`drivers/<driver>.py`) combines them.
TensorFlow is imported only to read a checkpoint's or TFRecord's index.
"""

from __future__ import annotations

import codecs
import difflib
import math
import os

from absl import logging
import sentencepiece as spm

from albert_tf.core import fileio
from albert_tf.core.config import CONFIG_FILE, SIZE_FIELDS, AlbertConfig
from albert_tf.core.errors import InputError
from albert_tf.drivers.distribution_flags import strategy_error
from albert_tf.drivers.recipes import fit_warmup_to_run
from albert_tf.text.vocab_files import read_spm_model


# ---- flags ------------------------------------------------------------------------------------
def require(FLAGS, *names, why=""):
    """Each flag must be given (non-empty)."""
    for name in names:
        if FLAGS[name].value in (None, ""):
            raise InputError(f"--{name} is required{why}")


# Flags whose values are network addresses (grpc://...), not paths.
ADDRESS_FLAGS = frozenset({"tpu", "tpu_name", "master"})


def check_filesystems(FLAGS):
    """Every flag whose value is a URL must name a filesystem TensorFlow has (an s3:// path
    would otherwise end in a traceback deep in the run).

    Args:
        FLAGS: The parsed flags.

    Raises:
        InputError: Naming the first flag whose scheme has no filesystem.
    """
    for name in sorted(FLAGS):
        if name in ADDRESS_FLAGS:
            continue
        value = FLAGS[name].value
        for path in str(value).split(",") if isinstance(value, str) else ():
            if "://" in path and not fileio.has_filesystem(path.strip()):
                raise InputError(
                    f"--{name} {path.strip()}: TensorFlow has no filesystem for "
                    f"{fileio.scheme(path.strip())}:// in this process (local paths, gs:// and "
                    "ram:// work; s3:// and hdfs:// need tensorflow-io installed and imported)"
                )


def check_at_least(FLAGS, minimum, *names):
    """Each integer flag (when set) must be >= minimum."""
    for name in names:
        value = FLAGS[name].value
        if value is not None and value < minimum:
            raise InputError(f"--{name}={value}: must be >= {minimum}")


def check_positive_float(FLAGS, *names):
    """Each float flag must be finite and > 0."""
    for name in names:
        value = FLAGS[name].value
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"--{name}={value}: must be a positive number")


def check_fraction(FLAGS, name, *, low_open=False, high_open=False):
    """A probability flag in [0, 1] (ends excluded as asked)."""
    value = FLAGS[name].value
    ok = (
        math.isfinite(value)
        and (value > 0 if low_open else value >= 0)
        and (value < 1 if high_open else value <= 1)
    )
    if not ok:
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise InputError(f"--{name}={value}: must be in {interval}")


def check_choice(flag, value, choices):
    """`value` must be one of `choices`; the error suggests the closest."""
    if value in choices:
        return
    close = difflib.get_close_matches(str(value), list(choices), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise InputError(f"--{flag}={value!r} is unknown{hint} (known: {', '.join(choices)})")


def check_divides(FLAGS, name, divisor, what):
    """A batch flag must be a multiple of `divisor` (replicas, accumulation steps)."""
    value = FLAGS[name].value
    if value % divisor:
        raise InputError(f"--{name}={value}: must be a multiple of {what} ({divisor})")


# ---- files and folders ------------------------------------------------------------------------
def check_file(flag, path, what="file"):
    """`path` (local or remote) must be an existing, non-empty regular file."""
    try:
        if not fileio.exists(path):
            raise InputError(f"--{flag}: {what} {path} does not exist")
        if not fileio.isfile(path):
            raise InputError(f"--{flag}: {path} is a directory, not a {what}")
        empty = fileio.getsize(path) == 0
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001  a bucket that cannot be reached, a denied read
        raise InputError(f"--{flag}: cannot read {what} {path} ({_cause(e)})") from None
    if empty:
        raise InputError(f"--{flag}: {what} {path} is empty")


def _cause(error) -> str:
    """The first line of a filesystem error, without TensorFlow's op context."""
    text = str(getattr(error, "message", "") or error).strip().splitlines()
    return text[0] if text else type(error).__name__


def check_dir(flag, path, what="folder"):
    """`path` (local or remote) must be an existing directory."""
    if not fileio.isdir(path):
        problem = "is a file, not a folder" if fileio.exists(path) else "does not exist"
        raise InputError(f"--{flag}: {what} {path} {problem}")


def _nearest_existing(path):
    """The path itself, or its closest ancestor that exists (local paths)."""
    path = fileio.abspath(path)
    while not fileio.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def check_output_dir(flag, path):
    """An output folder: a directory (or absent) that can be created and written; nothing is
    created here. A remote folder (gs://...) is checked only for not being an object: buckets
    have no folders to create and no permission bits to read before a write."""
    if fileio.isfile(path):
        raise InputError(f"--{flag}: {path} is a file; give a folder (it is created if absent)")
    if fileio.is_remote(path):
        return
    base = _nearest_existing(path)
    if not fileio.isdir(base):
        raise InputError(f"--{flag}: {path} cannot be created: {base} is a file")
    if not os.access(base, os.W_OK | os.X_OK):
        raise InputError(f"--{flag}: {path} is not writable ({base} denies writing)")


# what decides a checkpoint's variables; dropout and the initializer range may change
SHAPE_FIELDS = (*SIZE_FIELDS, "sharing")


def check_run_config(flag, output_dir, config):
    """An output folder whose checkpoints were written with another config cannot resume.

    Args:
        flag: The output folder's flag (for the message).
        output_dir: The run's output folder.
        config: The AlbertConfig of this run.

    Raises:
        InputError: The folder's albert_config.json (written by the run that made its
            checkpoints) differs in a field that shapes the variables.
    """
    path = fileio.join(output_dir, CONFIG_FILE)  # the config its checkpoints were written with
    if not fileio.isfile(path) or not any(n.endswith(".index") for n in fileio.listdir(output_dir)):
        return
    old = AlbertConfig.from_json_file(path)
    diffs = [
        f"{k} {getattr(old, k)} vs {getattr(config, k)}"
        for k in SHAPE_FIELDS
        if getattr(old, k) != getattr(config, k)
    ]
    if diffs:
        raise InputError(
            f"--{flag} {output_dir} holds checkpoints written with another config: "
            f"{', '.join(diffs)} (theirs vs this run's); use a new --{flag}, or the config "
            f"they were written with ({path})"
        )


def check_output_file(flag, path):
    """An output file: not a folder, in a folder that can be created and written."""
    if fileio.isdir(path) and not fileio.isfile(path):
        raise InputError(f"--{flag}: {path} is a folder; give a file name")
    check_output_dir(flag, fileio.dirname(fileio.abspath(path)))


def check_utf8(flag, path) -> bool:
    """The whole file must decode as UTF-8; the error names the line. Returns whether the
    file holds any non-blank text."""
    decoder, line, has_text = codecs.getincrementaldecoder("utf-8")(), 1, False
    with fileio.open_file(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            try:
                text = decoder.decode(chunk)
            except UnicodeDecodeError as e:
                line += chunk[: e.start].count(b"\n")
                raise InputError(
                    f"{path}:{line}: not UTF-8 text (byte {chunk[e.start]:#04x}; given by --{flag})"
                ) from None
            line += text.count("\n")
            has_text = has_text or bool(text.strip())
    return has_text


def check_has_checkpoint(FLAGS, why):
    """--init_checkpoint or a checkpoint in --output_dir must exist (no silent random weights)."""
    # deferred: keeps TensorFlow off this module's import
    import tensorflow as tf

    if FLAGS.init_checkpoint:
        return
    out = FLAGS.output_dir
    if fileio.isdir(out) and (
        tf.train.latest_checkpoint(out) or fileio.exists(fileio.join(out, "model.ckpt-best.index"))
    ):
        return
    raise InputError(
        f"--init_checkpoint is required {why}: --output_dir {out} holds no "
        "checkpoint, and the model would be random"
    )


# ---- model files ------------------------------------------------------------------------------
def load_config(flag, path):
    """The AlbertConfig of `path`; unknown keys, bad values and bad JSON are InputErrors."""
    check_file(flag, path, "config file")
    try:
        return AlbertConfig.from_json_file(path)
    except InputError as e:
        raise InputError(f"--{flag}: {e}") from None


def config_from_flags(FLAGS, flag="albert_config_file"):
    """The AlbertConfig of --albert_config_file with the drivers' model options applied
    (--recompute_grad, --albert_dropout_prob)."""
    config = load_config(flag, FLAGS[flag].value)
    if flag_value(FLAGS, "recompute_grad"):
        config = config.replace(recompute_grad=True)
    dropout = flag_value(FLAGS, "albert_dropout_prob")
    if dropout is not None:
        if not 0 <= dropout < 1:
            raise InputError(f"--albert_dropout_prob={dropout}: must be in [0, 1)")
        config = config.replace(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return config


# the most of a config's vocab_size an embedding table pads past its tokenizer (a gap of more
# is another model's tokenizer)
PADDING_SHARE = 0.01


def check_tokenizer(FLAGS, config=None):
    """--spm_model_file (a SentencePiece model) or --vocab_file (one piece a line) must exist,
    load, and fit the embedding: ids >= config.vocab_size would fail only inside training."""
    if FLAGS.spm_model_file:
        flag, path = "spm_model_file", FLAGS.spm_model_file
        if not fileio.is_folder(path):  # a folder: a TF Hub SavedModel holding the model
            check_file(flag, path, "SentencePiece model")
        size = _spm_size(path)
    elif FLAGS.vocab_file:
        flag, path = "vocab_file", FLAGS.vocab_file
        check_file(flag, path, "vocab file")
        check_utf8(flag, path)
        size = sum(1 for line in fileio.read_text(path).splitlines() if line.strip())
    else:
        raise InputError("--spm_model_file is required (or --vocab_file for a WordPiece model)")
    if config is None or size == config.vocab_size:
        return size
    if not config.vocab_size * (1 - PADDING_SHARE) <= size <= config.vocab_size:
        gap = ": a gap beyond padding, so another model's tokenizer"
        gap = gap if size < config.vocab_size else ""
        raise InputError(
            f"--{flag}: {path} has {size} pieces but the ALBERT config's vocab_size is "
            f"{config.vocab_size}{gap}; use the tokenizer released with the model"
        )
    # Ids still fit the embedding (a table padded past the vocabulary is common).
    logging.warning(
        "--%s: %s has %d pieces, fewer than the config's vocab_size %d; is it the "
        "tokenizer released with the model?",
        *(flag, path, size, config.vocab_size),
    )
    return size


def _spm_size(path):
    """Pieces of a SentencePiece model; an unreadable file is an InputError."""

    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(read_spm_model(path))
    except ValueError as e:  # a folder that holds no SentencePiece model
        raise InputError(f"--spm_model_file: {e}") from None
    except (OSError, RuntimeError) as e:
        raise InputError(
            f"--spm_model_file: {path} is not a SentencePiece model "
            f"({str(e).splitlines()[0] if str(e) else type(e).__name__})"
        ) from None
    return sp.GetPieceSize()


def check_checkpoint(flag, path, config, config_flag="albert_config_file", **kwargs):
    """A checkpoint (prefix, folder or .index file) that exists and whose variables have the
    names and shapes the config gives them; read from its index, no model is built."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats import tf1 as checkpoints

    # deferred: keeps TensorFlow off this module's import
    from albert_tf.formats import tfhub

    if not path:
        return None
    if tfhub.source_kind(path) is not None:  # a TF Hub SavedModel, a Model Garden checkpoint
        try:
            return tfhub.check_tf2_release_fits_config(config, path, config_file=f"--{config_flag}")
        except InputError as e:
            raise InputError(f"--{flag}: {e}") from None
    try:
        checkpoints.resolve_checkpoint_path(path)
    except FileNotFoundError as e:
        raise InputError(f"--{flag}: {e}") from None
    try:
        return checkpoints.check_checkpoint_fits_config(
            config, path, config_file=f"--{config_flag}", **kwargs
        )
    except InputError as e:
        raise InputError(f"--{flag}: {e}") from None


def check_seq_length(FLAGS, config, name="max_seq_length", minimum=2):
    """The sequence length must fit the position embeddings."""
    value = FLAGS[name].value
    if value < minimum:
        raise InputError(f"--{name}={value}: must be >= {minimum}")
    if value > config.max_position_embeddings:
        raise InputError(
            f"--{name}={value} exceeds the ALBERT config's max_position_embeddings "
            f"({config.max_position_embeddings}); use at most that"
        )


# ---- distribution -----------------------------------------------------------------------------


def strategy_from_flags(FLAGS, *batch_flags):
    """The tf.distribute strategy the distribution flags ask for, with the precision policy
    set; a TPU that is absent or a bad strategy setting is one InputError, and each batch flag
    must divide over the replicas."""
    # deferred: keeps TensorFlow off this module's import
    from albert_tf.engine import distribute

    try:
        distribute.set_precision(FLAGS.dtype)
        strategy = distribute.get_strategy(
            FLAGS.strategy_type,
            use_tpu=FLAGS.use_tpu,
            tpu=FLAGS.tpu or FLAGS.tpu_name or FLAGS.master,
            tpu_zone=FLAGS.tpu_zone,
            gcp_project=FLAGS.gcp_project,
            num_gpus=FLAGS.num_gpus,
            all_reduce_alg=FLAGS.all_reduce_alg,
            tpu_connect_timeout=FLAGS.tpu_connect_timeout,
        )
    except ValueError as e:
        raise strategy_error(e, FLAGS.use_tpu, FLAGS.strategy_type) from None
    logging.info(
        "strategy %s with %d replicas in sync",
        type(strategy).__name__,
        strategy.num_replicas_in_sync,
    )
    for name in batch_flags:
        check_divides(FLAGS, name, strategy.num_replicas_in_sync, "the replicas in sync")
    return strategy


# ---- shared by the fine-tuning drivers ------------------------------------------------------
def validate_finetuning(FLAGS, *, train_step_required=True):
    """Flags every fine-tuning driver shares; returns the AlbertConfig."""
    require(FLAGS, "albert_config_file", "output_dir")
    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict or flag_value(FLAGS, "export_dir")):
        raise InputError("nothing to do: give --do_train, --do_eval or --do_predict")
    check_at_least(
        FLAGS,
        1,
        "train_batch_size",
        "eval_batch_size",
        "predict_batch_size",
        "save_checkpoints_steps",
        "keep_checkpoint_max",
        "iterations_per_loop",
        "log_every_steps",
        "gradient_accumulation_steps",
    )
    check_at_least(FLAGS, 1 if train_step_required else 0, "train_step")
    check_at_least(FLAGS, 0, "warmup_step")
    fit_warmup_to_run(FLAGS)
    check_positive_float(FLAGS, "learning_rate")
    check_divides(
        FLAGS,
        "train_batch_size",
        FLAGS.gradient_accumulation_steps,
        "--gradient_accumulation_steps",
    )
    check_output_dir("output_dir", FLAGS.output_dir)
    if FLAGS.cached_dir:
        check_output_dir("cached_dir", FLAGS.cached_dir)
    config = config_from_flags(FLAGS)
    check_run_config("output_dir", FLAGS.output_dir, config)
    check_seq_length(FLAGS, config, minimum=3)  # [CLS], one piece of text, [SEP]
    check_tokenizer(FLAGS, config)
    check_checkpoint("init_checkpoint", FLAGS.init_checkpoint, config)
    if not FLAGS.do_train:
        check_has_checkpoint(FLAGS, "to evaluate, predict or export without --do_train")
    return config


def flag_value(FLAGS, name):
    return FLAGS[name].value if name in FLAGS else None


def check_dropout(FLAGS):
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


def non_empty(examples, flag, what):
    if not examples:
        raise InputError(f"--{flag}: {what} has no examples")
    return examples
