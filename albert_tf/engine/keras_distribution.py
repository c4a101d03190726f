"""`--strategy_type` on Keras' JAX backend: keras.distribution in place of tf.distribute.

"one_device" runs on JAX's default device; "mirrored" is `keras.distribution.DataParallel` over
the local devices (the GPUs, else the CPU devices, e.g. the ones
`XLA_FLAGS=--xla_force_host_platform_device_count=N` makes); "tpu" is `DataParallel` over the
TPU chips JAX sees on a TPU VM; "multi_worker_mirrored" first joins the hosts with
`keras.distribution.initialize` (from TF_CONFIG when set, else from Keras' own environment
variables or the TPU pod's), then `DataParallel` over every device of every host.

The engine keeps one code path: what it asks of a strategy (`scope()`,
`num_replicas_in_sync`) a `KerasDistribution` answers. The input pipeline stays tf.data on the
host; under `DataParallel` each step's global batch is split over the devices by Keras, and
over hosts by `distribute_dataset`.
"""

from __future__ import annotations

import contextlib
import json
import os

import keras


class KerasDistribution:
    """The strategy the engine sees on Keras' JAX backend.

    Args:
        distribution: a `keras.distribution.Distribution`, or None for one device.
        name: str. The `--strategy_type` it stands for.

    Example:

    >>> from albert_tf.engine.keras_distribution import KerasDistribution
    >>> strategy = KerasDistribution(None, "one_device")
    >>> strategy.num_replicas_in_sync
    1
    >>> with strategy.scope():
    ...     pass
    """

    def __init__(self, distribution, name: str):
        self.distribution, self.name = distribution, name

    @property
    def num_replicas_in_sync(self) -> int:
        """The devices one step's global batch is split over."""
        if self.distribution is None:
            return 1
        return int(self.distribution.device_mesh.devices.size)

    def scope(self):
        """The context that builds variables for this distribution."""
        if self.distribution is None:
            return contextlib.nullcontext()
        return self.distribution.scope()

    def __repr__(self):
        return f"KerasDistribution({self.name}, {self.num_replicas_in_sync} devices)"


def _local_devices(kind=None) -> list:
    """Keras' names of this host's devices of `kind` (default: the accelerator, else the CPU)."""
    import jax  # noqa: PLC0415  deferred: JAX is imported only on its backend

    devices = jax.local_devices(backend=kind) if kind else jax.local_devices()
    return [f"{d.platform}:{d.id}" for d in devices]


def _initialize_hosts():
    """Joins the hosts: from TF_CONFIG (the workers' addresses, this task's index) when set,
    else from KERAS_DISTRIBUTION_* or, on a TPU pod, from the TPU's own environment."""
    raw = os.environ.get("TF_CONFIG")
    if raw:
        cfg = json.loads(raw)
        cluster, task = cfg.get("cluster", {}), cfg.get("task", {})
        addresses = list(cluster.get("chief", [])) + list(cluster.get("worker", []))
        index = int(task.get("index", 0))
        if task.get("type") == "worker" and "chief" in cluster:
            index += 1
        keras.distribution.initialize(",".join(addresses), len(addresses), index)
    else:
        keras.distribution.initialize()


def keras_strategy(strategy_type: str, *, num_gpus=None) -> KerasDistribution:
    """The `KerasDistribution` for `--strategy_type`, set as Keras' global distribution.

    Args:
        strategy_type: str. "one_device", "mirrored", "multi_worker_mirrored" or "tpu".
        num_gpus: int or None. For "mirrored": the first `num_gpus` local devices; None: all.

    Returns:
        KerasDistribution: the strategy; models built afterwards are placed by it.

    Raises:
        ValueError: when `num_gpus` exceeds the local devices, or "tpu" finds no TPU.

    Example:

    >>> from albert_tf.engine.keras_distribution import keras_strategy
    >>> keras_strategy("one_device").num_replicas_in_sync
    1
    """
    distribution = None
    if strategy_type == "tpu":
        devices = _local_devices("tpu") if _has_platform("tpu") else []
        if not devices:
            raise ValueError(
                "strategy_type=tpu (use_tpu) on the JAX backend needs TPU chips that JAX "
                "sees (run on a TPU VM with libtpu installed); this machine has none"
            )
        distribution = keras.distribution.DataParallel(devices=devices)
    elif strategy_type == "multi_worker_mirrored":
        _initialize_hosts()
        distribution = keras.distribution.DataParallel(devices=keras.distribution.list_devices())
    elif strategy_type == "mirrored":
        devices = _local_devices()
        n = len(devices) if num_gpus is None else num_gpus
        if n > len(devices):
            raise ValueError(f"num_gpus={n} but only {len(devices)} devices are visible")
        distribution = keras.distribution.DataParallel(devices=devices[: max(n, 1)])
    keras.distribution.set_distribution(distribution)
    return KerasDistribution(distribution, strategy_type)


def _has_platform(kind) -> bool:
    import jax  # noqa: PLC0415  deferred: JAX is imported only on its backend

    try:
        return bool(jax.devices(kind))
    except RuntimeError:
        return False
