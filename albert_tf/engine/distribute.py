"""One place for tf.distribute: strategies from flags, batch semantics, chief-only writing,
precision.

Every driver calls `strategy_from_flags(FLAGS)`; `train_batch_size` is the global batch, as on
Google's TPUs, and datasets are built per input pipeline with the per-replica batch.
"""

from __future__ import annotations

import json
import os
import tempfile

from absl import logging
import tensorflow as tf

from albert_tf.core import fileio
from albert_tf.engine.distribution_flags import DTYPES, STRATEGIES


def _tpu_strategy(tpu, zone, project):
    """Standard Cloud TPU recipe: resolve, connect, initialise, TPUStrategy."""
    if not tpu and not os.environ.get("TPU_NAME") and not _on_tpu_vm():
        raise ValueError(
            "--use_tpu/--strategy_type=tpu needs a reachable TPU: pass --tpu (or --tpu_name) with "
            "the TPU's name or grpc:// address, or --tpu=local on a TPU VM; none was given and "
            "this machine has no TPU"
        )
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=tpu, zone=zone, project=project
        )
        if tpu not in (None, "local"):
            tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError, RuntimeError) as e:
        raise ValueError(f"cannot reach TPU {tpu!r}: {e}") from None
    return tf.distribute.TPUStrategy(resolver)


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
):
    """Build the tf.distribute strategy; `devices` overrides the mirrored device list."""
    if use_tpu:
        strategy_type = "tpu"
    if strategy_type not in STRATEGIES:
        raise ValueError(f"--strategy_type {strategy_type!r} is unknown; use one of {STRATEGIES}")
    if strategy_type == "tpu":
        return _tpu_strategy(tpu, tpu_zone, gcp_project)
    if strategy_type == "multi_worker_mirrored":
        return _multi_worker_strategy(all_reduce_alg)
    gpus = tf.config.list_logical_devices("GPU")  # initialises the runtime: not before MWMS
    if strategy_type == "one_device":
        return tf.distribute.OneDeviceStrategy("/gpu:0" if gpus else "/cpu:0")
    if devices is None:
        n = len(gpus) if num_gpus is None else num_gpus
        if n > len(gpus):
            raise ValueError(f"--num_gpus={n} but only {len(gpus)} GPUs are visible")
        devices = [f"/gpu:{i}" for i in range(n)] or ["/cpu:0"]
    return tf.distribute.MirroredStrategy(
        devices=devices, cross_device_ops=_cross_device_ops(all_reduce_alg)
    )


def _multi_worker_strategy(all_reduce_alg):
    """MultiWorkerMirroredStrategy from TF_CONFIG; must be created before any other TF op."""
    if "TF_CONFIG" not in os.environ:
        raise ValueError(
            "--strategy_type=multi_worker_mirrored needs the TF_CONFIG environment variable"
        )
    impl = {
        "nccl": tf.distribute.experimental.CommunicationImplementation.NCCL,
        "ring": tf.distribute.experimental.CommunicationImplementation.RING,
    }.get(all_reduce_alg, tf.distribute.experimental.CommunicationImplementation.AUTO)
    return tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(implementation=impl)
    )


def strategy_from_flags(FLAGS):
    """The strategy the shared distribution flags ask for, with the precision policy set."""
    set_precision(FLAGS.dtype)
    strategy = get_strategy(
        FLAGS.strategy_type,
        use_tpu=FLAGS.use_tpu,
        tpu=FLAGS.tpu or FLAGS.tpu_name or FLAGS.master,
        tpu_zone=FLAGS.tpu_zone,
        gcp_project=FLAGS.gcp_project,
        num_gpus=FLAGS.num_gpus,
        all_reduce_alg=FLAGS.all_reduce_alg,
    )
    logging.info(
        "strategy %s with %d replicas in sync",
        type(strategy).__name__,
        strategy.num_replicas_in_sync,
    )
    return strategy


def jit_compile_default(strategy, requested=None):
    """XLA on for TPU unless asked otherwise; off elsewhere unless asked."""
    if requested is not None:
        return bool(requested)
    return isinstance(strategy, tf.distribute.TPUStrategy)


def set_precision(dtype: str):
    """Keras mixed precision: variables stay float32; LayerNorm, softmax and losses run in
    float32."""
    policies = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
    if dtype not in policies:
        raise ValueError(f"--dtype {dtype!r} is unknown; use one of {DTYPES}")
    # deferred: keeps TensorFlow off this module's import
    import keras

    keras.mixed_precision.set_global_policy(policies[dtype])


def per_replica_batch_size(global_batch_size: int, strategy) -> int:
    """The global batch split over replicas; it must divide evenly (static shapes)."""
    n = strategy.num_replicas_in_sync
    if global_batch_size % n:
        raise ValueError(
            f"batch size {global_batch_size} is not divisible by the {n} replicas in sync"
        )
    return global_batch_size // n


def distribute_dataset(strategy, dataset_fn, global_batch_size: int):
    """`dataset_fn(per_replica_batch, input_context)` → dataset, built once per input pipeline."""
    per_replica = per_replica_batch_size(global_batch_size, strategy)
    logging.info(
        "global batch %d = %d replicas × %d",
        global_batch_size,
        strategy.num_replicas_in_sync,
        per_replica,
    )
    if isinstance(strategy, tf.distribute.OneDeviceStrategy) or strategy.num_replicas_in_sync == 1:
        return dataset_fn(per_replica, tf.distribute.InputContext())
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
    """The chief writes checkpoints and summaries: task 'chief', or worker 0 without a chief."""
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
