"""The distribution flags every driver shares: Google's TPU flags plus the tf.distribute strategy,
precision, XLA, gradient accumulation and recomputation. Defining them imports no TensorFlow, so
a driver's `--help` and flag errors come back at once."""

from absl import flags

from albert_tf.core.errors import InputError
from albert_tf.drivers.flag_words import in_flag_words
from albert_tf.engine.strategy_choices import DTYPES, STRATEGIES, TPU_CONNECT_SECONDS

# get_strategy's and set_precision's arguments, said as the flags that set them
STRATEGY_ARGUMENTS = ("strategy_type", "use_tpu", "tpu", "tpu_name", "num_gpus", "dtype")
STRATEGY_WORDS = {n: f"--{n}" for n in STRATEGY_ARGUMENTS + ("tpu_connect_timeout",)}


def define_distribution_flags():
    """The flags every driver shares (Google's TPU flags plus strategy, precision and XLA)."""
    if "strategy_type" in flags.FLAGS:
        return
    flags.DEFINE_enum(
        "strategy_type",
        "one_device",
        STRATEGIES,
        "tf.distribute strategy; --use_tpu selects 'tpu'.",
    )
    flags.DEFINE_bool(
        "use_tpu", False, "Run on Cloud TPU (Google's flag; same as --strategy_type=tpu)."
    )
    flags.DEFINE_string("tpu", None, "TPU name or grpc:// address ('local' on a TPU VM).")
    flags.DEFINE_string("tpu_name", None, "Google's name for --tpu.")
    flags.DEFINE_float(
        "tpu_connect_timeout",
        TPU_CONNECT_SECONDS,
        "Seconds to wait for the TPU to answer; then the run ends with one error line.",
    )
    flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU.")
    flags.DEFINE_string("gcp_project", None, "GCP project of the TPU.")
    flags.DEFINE_string(
        "master", None, "TensorFlow master address (Google's flag; used as the TPU address)."
    )
    flags.DEFINE_integer("num_tpu_cores", 8, "Google's flag; TPUStrategy finds the cores itself.")
    flags.DEFINE_integer("num_gpus", None, "GPUs for the mirrored strategy (default: all visible).")
    flags.DEFINE_enum(
        "all_reduce_alg",
        None,
        ["nccl", "hierarchical_copy", "ring", "auto"],
        "Cross-device all-reduce for mirrored / multi-worker strategies.",
    )
    flags.DEFINE_enum(
        "dtype", "float32", DTYPES, "Compute precision (Keras mixed precision policy)."
    )
    flags.DEFINE_bool("jit_compile", None, "Compile the train step with XLA (default: on for TPU).")
    flags.DEFINE_integer(
        "gradient_accumulation_steps",
        1,
        "Micro-batches per optimizer update (one update = one step on their concatenation).",
    )
    flags.DEFINE_bool(
        "recompute_grad",
        False,
        "Recompute each shared Transformer block's activations in the backward pass "
        "(one custom gradient over the layer loop, docs/performance.md): the same "
        "gradients, less activation memory, more time.",
    )


def strategy_error(error, use_tpu, strategy_type) -> InputError:
    """A strategy or precision the library refused, as one error naming the flags.

    Args:
        error: The library's ValueError (it names `get_strategy`'s arguments).
        use_tpu: The value of --use_tpu.
        strategy_type: The value of --strategy_type.

    Returns:
        InputError. The message in flag words, led by the flag asked for when it names none.

    Example:

    >>> print(strategy_error(ValueError("num_gpus=4 but only 1 GPUs are visible"), False, "x"))
    --num_gpus=4 but only 1 GPUs are visible
    >>> print(strategy_error(ValueError("cannot reach TPU 'a'"), True, "tpu"))
    --use_tpu: cannot reach TPU 'a'
    """
    flag = "--use_tpu" if use_tpu else f"--strategy_type={strategy_type}"
    message = in_flag_words(error, STRATEGY_WORDS)
    return InputError(message if message.startswith("--") else f"{flag}: {message}")
