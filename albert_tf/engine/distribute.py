"""Everything about tf.distribute in one module: strategies, batch sizes, chief-only writing and
the precision policy.

Every driver calls `get_strategy` (albert_tf.drivers.validation.strategy_from_flags).
`train_batch_size` is the global batch over all replicas, as on Google's TPUs; datasets are
built once per input pipeline with the per-replica batch.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading

from absl import logging
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.engine.strategy_choices import DTYPES, STRATEGIES, TPU_CONNECT_SECONDS


def _tpu_strategy(tpu, zone, project, timeout=TPU_CONNECT_SECONDS):
    """Standard Cloud TPU recipe: resolve, connect, initialise, TPUStrategy."""
    if not tpu and not os.environ.get("TPU_NAME") and not _on_tpu_vm():
        raise ValueError(
            "use_tpu/strategy_type=tpu needs a reachable TPU: pass tpu (or tpu_name) with "
            "the TPU's name or grpc:// address, or tpu=local on a TPU VM; none was given and "
            "this machine has no TPU"
        )
    logging.info("connecting to TPU %s (gives up after %.0f s)", tpu or "local", timeout)
    message = (
        f"--tpu {tpu or 'local'}: no TPU answered within {timeout:.0f} s "
        "(--tpu_connect_timeout); check its name or address, that it is running, and that "
        "this VM can reach it"
    )
    try:
        with deadline(timeout, message):
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
                tpu=tpu, zone=zone, project=project
            )
            if tpu not in (None, "local"):
                tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError, RuntimeError) as e:
        raise ValueError(f"cannot reach TPU {tpu!r}: {e}") from None
    return tf.distribute.TPUStrategy(resolver)


@contextlib.contextmanager
def deadline(seconds: float, message: str):
    """Within the block: when it has not finished after `seconds`, the process prints
    `error: <message>` and exits 2 (a TPU that never answers makes TensorFlow wait forever,
    and its wait cannot be interrupted).

    Args:
        seconds: How long the block may take.
        message: The error line, without "error: ".

    Yields:
        Nothing.
    """
    timer = threading.Timer(seconds, _give_up, args=(message,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _give_up(message):
    logging.flush()
    sys.stderr.flush()
    print(f"error: {message}", file=sys.stderr, flush=True)
    os._exit(2)


def _on_tpu_vm():
    return os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")


def _cross_device_ops(alg):
    if alg == "nccl":
        return tf.distribute.NcclAllReduce()
    if alg == "hierarchical_copy":
        return tf.distribute.HierarchicalCopyAllReduce()
    return None


def get_strategy(
    strategy_type="one_device",
    *,
    use_tpu=False,
    tpu=None,
    tpu_zone=None,
    gcp_project=None,
    num_gpus=None,
    all_reduce_alg=None,
    devices=None,
    tpu_connect_timeout=TPU_CONNECT_SECONDS,
):
    """Builds a `tf.distribute` strategy by name, as the drivers' `--strategy_type` flag does.

    "one_device" runs on the first GPU, else the CPU; "mirrored" replicates the model over the
    local GPUs (or the CPU when there are none); "multi_worker_mirrored" reads the cluster from
    the `TF_CONFIG` environment variable and must be created before any other TensorFlow op;
    "tpu" connects to and initialises a Cloud TPU.

    Args:
        strategy_type: str. "one_device" (default), "mirrored", "multi_worker_mirrored" or
            "tpu".
        use_tpu: bool. Google's flag: True means `strategy_type="tpu"`. Default False.
        tpu: str or None. The TPU's name or grpc:// address, or "local" on a TPU VM; None: the
            `TPU_NAME` environment variable or this VM's TPU.
        tpu_zone: str or None. The GCE zone of the TPU.
        gcp_project: str or None. The GCP project of the TPU.
        num_gpus: int or None. The number of GPUs to mirror over; None: all visible GPUs.
        all_reduce_alg: str or None. The cross-device all-reduce: "nccl" or
            "hierarchical_copy" for "mirrored"; "nccl" or "ring" for "multi_worker_mirrored";
            None or "auto": TensorFlow's choice.
        devices: list of str, or None. For "mirrored": the devices to mirror over, instead of
            the GPUs picked by `num_gpus`.
        tpu_connect_timeout: float. Seconds to wait for a TPU to answer before the process
            ends with one error line (TensorFlow itself would wait forever). Default 300.

    Returns:
        `tf.distribute.Strategy`: the strategy.

    Raises:
        ValueError: when `strategy_type` is unknown, `num_gpus` exceeds the visible GPUs, no TPU
            can be reached, or "multi_worker_mirrored" is asked for without `TF_CONFIG`.

    Example:

    >>> import albert_tf
    >>> strategy = albert_tf.get_strategy()  # the first GPU, else the CPU
    >>> type(strategy).__name__, strategy.num_replicas_in_sync
    ('OneDeviceStrategy', 1)
    >>> strategy = albert_tf.get_strategy("mirrored", devices=["/cpu:0"])
    >>> type(strategy).__name__, strategy.num_replicas_in_sync
    ('MirroredStrategy', 1)
    >>> albert_tf.get_strategy("gpu")
    Traceback (most recent call last):
    ...
    ValueError: strategy_type 'gpu' is unknown; use one of ('one_device', 'mirrored', ...)
    """
    if use_tpu:
        strategy_type = "tpu"
    if strategy_type not in STRATEGIES:
        raise ValueError(f"strategy_type {strategy_type!r} is unknown; use one of {STRATEGIES}")
    if not _on_tensorflow():  # keras.distribution: albert_tf/engine/keras_distribution.py
        # deferred: Keras stays off this module's import
        from albert_tf.engine.keras_distribution import keras_strategy

        return keras_strategy(strategy_type, num_gpus=num_gpus)
    if strategy_type == "tpu":
        return _tpu_strategy(tpu, tpu_zone, gcp_project, tpu_connect_timeout)
    if strategy_type == "multi_worker_mirrored":
        return _multi_worker_strategy(all_reduce_alg)
    gpus = tf.config.list_logical_devices("GPU")  # initialises the runtime: not before MWMS
    if strategy_type == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
    if devices is None:
        n = len(gpus) if num_gpus is None else num_gpus
        if n > len(gpus):
            raise ValueError(f"num_gpus={n} but only {len(gpus)} GPUs are visible")
        devices = [f"/gpu:{i}" for i in range(n)] or ["/cpu:0"]
    return tf.distribute.MirroredStrategy(
        devices=devices, cross_device_ops=_cross_device_ops(all_reduce_alg)
    )


def _multi_worker_strategy(all_reduce_alg):
    """MultiWorkerMirroredStrategy from TF_CONFIG; must be created before any other TF op."""
    if "TF_CONFIG" not in os.environ:
        raise ValueError(
            "strategy_type=multi_worker_mirrored needs the TF_CONFIG environment variable"
        )
    impl = {
        "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
        "ring": tf.distribute.experimental.CommunicationImplementation.RING,
    }.get(all_reduce_alg, tf.distribute.experimental.CommunicationImplementation.AUTO)
    return tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(implementation=impl)
    )


def _on_tensorflow() -> bool:
    import keras  # deferred: keeps Keras off this module's import

    return keras.backend.backend() == "tensorflow"


def jit_compile_default(strategy, requested=None):
    """XLA on for TPU unless asked otherwise; off elsewhere unless asked. On JAX every step is
    compiled by XLA unless asked otherwise (--use_xla is implicit there)."""
    if requested is not None:
        return bool(requested)
    if not _on_tensorflow():
        return True
    return isinstance(strategy, tf.distribute.TPUStrategy)


def set_precision(dtype: str):
    """Sets the Keras precision policy for the models built after it.

    With "bfloat16" or "float16" (Keras mixed precision) the variables stay float32, and the
    models compute LayerNorm, softmax, logits and losses in float32.

    Args:
        dtype: str. "float32", "bfloat16" or "float16".

    Raises:
        ValueError: when `dtype` is none of those.
    """
    policies = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
    if dtype not in policies:
        raise ValueError(f"dtype {dtype!r} is unknown; use one of {DTYPES}")
    # deferred: keeps TensorFlow off this module's import
    import keras

    keras.mixed_precision.set_global_policy(policies[dtype])


def float32_model(model, build):
    """`model` itself when it computes in float32, else `build()` run under the float32 policy:
    the exports (SavedModel, LiteRT, ONNX) of a --dtype=bfloat16/float16 run are of its float32
    checkpoint, as every exporter writes float32 graphs.

    Args:
        model: A Keras model (or layer).
        build: Callable with no arguments that builds the same model, weights loaded.

    Returns:
        A model computing in float32.

    >>> import keras
    >>> from albert_tf.engine.distribute import float32_model
    >>> float32_model(keras.layers.Dense(1), build=lambda: "rebuilt").compute_dtype
    'float32'
    """
    # deferred: keeps TensorFlow off this module's import
    import keras

    if keras.backend.standardize_dtype(model.compute_dtype) == "float32":
        return model
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float32")
    try:
        return build()
    finally:
        keras.config.set_dtype_policy(policy)


def per_replica_batch_size(global_batch_size: int, strategy) -> int:
    """The global batch split over the replicas; it must divide evenly (static shapes).

    Args:
        global_batch_size: int. The batch of one step over all replicas.
        strategy: `tf.distribute.Strategy`. The strategy whose replicas share the batch.

    Returns:
        int: the batch of one replica.

    Raises:
        ValueError: when the replicas do not divide `global_batch_size`.
    """
    n = strategy.num_replicas_in_sync
    if global_batch_size % n:
        raise ValueError(
            f"batch size {global_batch_size} is not divisible by the {n} replicas in sync"
        )
    return global_batch_size // n


_SAID_SPLITS = set()  # the batch splits logged so far


def distribute_dataset(strategy, dataset_fn, global_batch_size: int):
    """The training dataset for a strategy, built once per input pipeline.

    Args:
        strategy: `tf.distribute.Strategy`. The strategy to feed.
        dataset_fn: Callable `(per_replica_batch_size, tf.distribute.InputContext) ->
            tf.data.Dataset`.
        global_batch_size: int. The batch of one step over all replicas.

    Returns:
        The dataset itself on one replica, else a distributed dataset.

    Raises:
        ValueError: when the replicas do not divide `global_batch_size`.
    """
    per_replica = per_replica_batch_size(global_batch_size, strategy)
    split = (global_batch_size, strategy.num_replicas_in_sync, per_replica)
    if split not in _SAID_SPLITS:  # once a process: a run builds its dataset per epoch
        _SAID_SPLITS.add(split)
        logging.info("global batch %d = %d replicas × %d", *split)
    if isinstance(strategy, tf.distribute.OneDeviceStrategy) or strategy.num_replicas_in_sync == 1:
        return dataset_fn(per_replica, tf.distribute.InputContext())
    if not _on_tensorflow():  # Keras splits the global batch over devices (and hosts) itself
        return dataset_fn(global_batch_size, tf.distribute.InputContext())
    return strategy.distribute_datasets_from_function(
        lambda ctx: dataset_fn(ctx.get_per_replica_batch_size(global_batch_size), ctx)
    )


# ---- chief-only writing ------------------------------------------------------------------------
def task_info():
    """(task_type, task_id, has_chief) from TF_CONFIG; (None, 0, False) when not multi-worker."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return None, 0, False
    cfg = json.loads(raw)
    task = cfg.get("task", {})
    return task.get("type"), int(task.get("index", 0)), "chief" in cfg.get("cluster", {})


def is_chief(strategy=None) -> bool:
    """Whether this process writes checkpoints and summaries (the chief).

    The chief is task "chief" of `TF_CONFIG`, or worker 0 when the cluster has no chief; a
    process without `TF_CONFIG` is always the chief.

    Args:
        strategy: Unused; kept so callers can pass their strategy.

    Returns:
        bool: True for the chief.
    """
    task_type, task_id, has_chief = task_info()
    if task_type is None:
        return True
    if task_type == "chief":
        return True
    return task_type == "worker" and task_id == 0 and not has_chief


def writable_dir(output_dir: str, strategy=None) -> str:
    """output_dir for the chief; a private temporary dir for the other workers (whose writes
    collective checkpointing still needs, but which nobody reads)."""
    if is_chief(strategy):
        fileio.makedirs(output_dir)
        return output_dir
    task_type, task_id, _ = task_info()
    return tempfile.mkdtemp(prefix=f"albert_tf-{task_type}{task_id}-")
