"""The training engine's paths that a JAX run takes, in process on whichever backend the test
process has (CI runs them again under KERAS_BACKEND=jax): checkpoints on a bucket (ram://) with
an exact resume, gradient accumulation equal to one big batch, mixed bfloat16 close to float32
with float32 checkpoints; and `--strategy_type` tpu / multi_worker_mirrored mapped to
keras.distribution (recorded, no TPU or second host needed), with one clear error without TPU.

One tiny classifier run of 2 steps (batch 8, dropout 0, saved at each step on ram://) is the
reference every other run is compared with."""

import json
import types

import keras
import numpy as np
import pytest
import ramfs
import tensorflow as tf

from albert_tf import AlbertClassifier, AlbertConfig
from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.drivers import validation
from albert_tf.engine import keras_distribution
from albert_tf.engine.distribute import set_precision
from albert_tf.engine.optimizers import create_optimizer
from albert_tf.engine.run_config import RunConfig
from albert_tf.engine.save_points import write_checkpoint_state
from albert_tf.engine.training import train
from albert_tf.engine.variable_checkpoint import checkpoint_file, uses_variable_checkpoints

pytestmark = pytest.mark.backends

ON_JAX = keras.backend.backend() == "jax"
BATCH, LENGTH, STEPS = 8, 16, 2


def _features():
    """16 fixed examples: each step of batch 8 reads the next 8 (step 1: 0-7, step 2: 8-15)."""
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 1000, (2 * BATCH, LENGTH)).astype(np.int32)
    return {
        "input_ids": ids,
        "input_mask": np.ones_like(ids),
        "segment_ids": np.zeros_like(ids),
        "label_ids": rng.integers(0, 2, (2 * BATCH,)).astype(np.int32),
    }


def _dataset_fn(batch, ctx):
    del ctx
    data = tf.data.Dataset.from_tensor_slices(_features())
    return data.repeat().batch(batch, drop_remainder=True)


def _run(fixtures_dir, output_dir, *, accumulation=1, save_every=1):
    """`STEPS` updates of the tiny classifier from Google's checkpoint (dropout 0, seeded head)."""
    tiny = fixtures_dir / "albert_tiny"
    config = AlbertConfig.from_json_file(tiny / "albert_config.json").replace(
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
    )
    return train(
        lambda: AlbertClassifier(config, 2, dropout_prob=0.0),
        lambda: create_optimizer(
            1e-2, STEPS, 0, optimizer="lamb", gradient_accumulation_steps=accumulation
        ),
        _dataset_fn,
        global_batch_size=BATCH,
        run=RunConfig(
            output_dir,
            STEPS,
            save_checkpoints_steps=save_every,
            gradient_accumulation_steps=accumulation,
            seed=3,
            verbose=0,
        ),
        init_checkpoint=str(tiny / "model.ckpt-best"),
    )


def _weights(result):
    return [np.asarray(w) for w in result.model.trainable_weights]


def _max_diff(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def _checkpoint_files(directory, step):
    """The files of checkpoint ckpt-<step>: one .weights.npz on JAX, TensorFlow's
    .index + .data-* on TensorFlow."""
    if uses_variable_checkpoints():
        return [checkpoint_file(fileio.join(directory, f"ckpt-{step}"))]
    return fileio.glob(fileio.join(directory, f"ckpt-{step}.*"))


def _saved_float_dtypes(prefix) -> set:
    """The dtypes of a checkpoint's floating-point arrays, read back from its file(s)."""
    if uses_variable_checkpoints():
        arrays = fileio.read_npz(checkpoint_file(prefix))
        dtypes = {str(a.dtype) for k, a in arrays.items() if k != "index"}
    else:
        # the reader itself: load_checkpoint takes a ram:// prefix for a folder
        saved = tf.compat.v1.train.NewCheckpointReader(prefix).get_variable_to_dtype_map()
        dtypes = {d.name for d in saved.values()}
    return {d for d in dtypes if "float" in d}


@pytest.fixture(scope="module")
def reference(fixtures_dir):
    """The float32 run on a ram:// bucket, checkpointed at steps 1 and 2."""
    out = ramfs.new_bucket("jax-paths") + "/run"
    return out, _run(fixtures_dir, out)


def test_checkpoints_on_a_bucket_resume_exactly(reference, fixtures_dir):
    """ckpt-1 alone in a fresh bucket folder, the run started again: it resumes from step 1
    and ends where the unbroken run ended (every weight and the optimizer's state)."""
    out, unbroken = reference
    names = fileio.listdir(out)
    for step in (1, 2):
        assert _checkpoint_files(out, step), names
    if uses_variable_checkpoints():
        assert f"ckpt-{STEPS}.weights.npz" in names and not any(".index" in n for n in names)
    resumed_dir = ramfs.new_bucket("jax-paths") + "/resumed"
    fileio.makedirs(resumed_dir)
    for path in _checkpoint_files(out, 1):
        fileio.copy(path, fileio.join(resumed_dir, fileio.basename(path)))
    write_checkpoint_state(resumed_dir, ["ckpt-1"])
    resumed = _run(fixtures_dir, resumed_dir)
    assert resumed.global_step == STEPS
    assert list(resumed.train_history.get("loss", [])) != []  # it trained the second step
    assert _max_diff(_weights(resumed), _weights(unbroken)) < 1e-6
    got = [np.asarray(v) for v in resumed.model.optimizer.variables]
    want = [np.asarray(v) for v in unbroken.model.optimizer.variables]
    assert int(resumed.model.optimizer.iterations) == STEPS
    assert _max_diff(got, want) < 1e-6
    assert _checkpoint_files(resumed_dir, STEPS)


def test_gradient_accumulation_equals_one_big_batch(reference, fixtures_dir):
    """Batch 8 as 2 micro-batches of 4 (fit runs 4 micro-steps for 2 updates): the weights of
    one batch of 8 per update, with LAMB's trust ratio over the accumulated mean gradient."""
    _, big = reference
    out = ramfs.new_bucket("jax-paths") + "/accumulated"
    accumulated = _run(fixtures_dir, out, accumulation=2, save_every=STEPS)
    assert accumulated.global_step == STEPS
    assert int(accumulated.model.optimizer.iterations) == STEPS
    assert _max_diff(_weights(accumulated), _weights(big)) < 1e-6


def test_mixed_bfloat16_trains_close_to_float32_with_float32_checkpoints(reference, fixtures_dir):
    """--dtype=bfloat16 (Keras' mixed_bfloat16): the layers compute in bfloat16, the variables
    and so the checkpoints stay float32, and the losses agree with float32's loosely."""
    _, full = reference
    out = ramfs.new_bucket("jax-paths") + "/bf16"
    set_precision("bfloat16")
    try:
        low = _run(fixtures_dir, out, save_every=STEPS)
        assert low.model.albert.encoder.attention_sublayers[0].compute_dtype == "bfloat16"
    finally:
        set_precision("float32")
    full_loss, low_loss = full.train_history["loss"], low.train_history["loss"]
    assert np.all(np.isfinite(low_loss)), low_loss
    assert abs(low_loss[-1] - full_loss[-1]) <= 0.05 * abs(full_loss[-1]), (low_loss, full_loss)
    assert _saved_float_dtypes(fileio.join(out, f"ckpt-{STEPS}")) == {"float32"}
    assert keras.mixed_precision.global_policy().name == "float32"


# ---- --strategy_type on keras.distribution (recorded: no TPU or second host here) ----------
class _Recorded:
    """Stands in for keras.distribution's DataParallel, initialize and set_distribution."""

    def __init__(self, monkeypatch):
        self.calls = []
        recorder = self

        class DataParallel:
            def __init__(self, devices):
                recorder.calls.append(("DataParallel", list(devices)))
                self.device_mesh = types.SimpleNamespace(devices=np.array(devices))

            def scope(self):
                raise AssertionError("not used")

        monkeypatch.setattr(keras.distribution, "DataParallel", DataParallel)
        monkeypatch.setattr(
            keras.distribution,
            "initialize",
            lambda *args, **kw: self.calls.append(("initialize", args, kw)),
        )
        monkeypatch.setattr(
            keras.distribution, "set_distribution", lambda d: self.calls.append(("set", d))
        )
        monkeypatch.setattr(
            keras.distribution, "list_devices", lambda: ["tpu:0", "tpu:1", "tpu:2", "tpu:3"]
        )


def _fake_tpus(monkeypatch, n=4):
    """jax.devices("tpu") / jax.local_devices(backend="tpu") as a TPU VM with n chips sees
    them."""
    import jax

    chips = [types.SimpleNamespace(platform="tpu", id=i) for i in range(n)]
    monkeypatch.setattr(jax, "devices", lambda kind=None: chips)
    monkeypatch.setattr(jax, "local_devices", lambda backend=None: chips)


def test_tpu_maps_to_data_parallel_over_the_chips(monkeypatch):
    recorded = _Recorded(monkeypatch)
    _fake_tpus(monkeypatch)
    strategy = keras_distribution.keras_strategy("tpu")
    chips = ["tpu:0", "tpu:1", "tpu:2", "tpu:3"]
    assert recorded.calls[0] == ("DataParallel", chips)
    assert recorded.calls[1][0] == "set" and len(recorded.calls) == 2
    assert strategy.num_replicas_in_sync == 4 and strategy.name == "tpu"


@pytest.mark.parametrize(
    "tf_config, call",
    [
        # no TF_CONFIG: Keras finds the hosts itself (its own variables, or the TPU pod's)
        (None, ((), {})),
        # two workers: their addresses, this task's index
        (
            {"cluster": {"worker": ["h0:2222", "h1:2222"]}, "task": {"type": "worker", "index": 1}},
            (("h0:2222,h1:2222", 2, 1), {}),
        ),
        # a chief is process 0, so worker 0 is process 1
        (
            {
                "cluster": {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"]},
                "task": {"type": "worker", "index": 0},
            },
            (("c:2222,w0:2222,w1:2222", 3, 1), {}),
        ),
    ],
)
def test_multi_worker_initializes_the_hosts_then_data_parallel(monkeypatch, tf_config, call):
    recorded = _Recorded(monkeypatch)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    if tf_config:
        monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    strategy = keras_distribution.keras_strategy("multi_worker_mirrored")
    assert recorded.calls[0] == ("initialize", *call)
    assert recorded.calls[1] == ("DataParallel", ["tpu:0", "tpu:1", "tpu:2", "tpu:3"])
    assert strategy.num_replicas_in_sync == 4  # every device of every host


def test_tpu_without_a_tpu_is_one_clear_error(monkeypatch):
    """This machine has no TPU (JAX's CPU build raises for jax.devices("tpu")): refused by
    name, nothing set as Keras' distribution."""
    recorded = _Recorded(monkeypatch)
    with pytest.raises(ValueError, match=r"^strategy_type=tpu \(use_tpu\) on the JAX backend"):
        keras_distribution.keras_strategy("tpu")  # the library's words; drivers say --flags
    assert recorded.calls == []


@pytest.mark.skipif(not ON_JAX, reason="on TensorFlow, tpu is TPUStrategy (test_distribute.py)")
def test_driver_tpu_without_a_tpu_is_an_input_error():
    """What the drivers print as their `error:` line (run_*.py --use_tpu on a CPU machine)."""
    flags = types.SimpleNamespace(
        dtype="float32",
        strategy_type="one_device",
        use_tpu=True,
        tpu=None,
        tpu_name=None,
        master=None,
        tpu_zone=None,
        gcp_project=None,
        num_gpus=None,
        all_reduce_alg=None,
        tpu_connect_timeout=5,
    )
    with pytest.raises(InputError, match=r"^--strategy_type=tpu \(--use_tpu\) on the JAX"):
        validation.strategy_from_flags(flags, "train_batch_size")
