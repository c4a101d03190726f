"""tf.distribute: mirrored = one device, multi-worker agreement, XLA, bf16, clear TPU errors."""

import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest
import python_processes
from shared_runs import tiny_mrpc_flags
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.engine import distribute
from albert_tf.pretraining.pretrain import PretrainingOptions, pretrain

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[2])
SCRIPTS = os.path.join(ROOT, "tests", "scripts")


# A child's wall time measures the machine's load, not the child: under pytest -n 2 beside
# other jobs, mirrored_equivalence.py (34 CPU-seconds) took 485-658 s of wall time. So children
# are bounded by CPU time; the wall-clock limit only catches a child that hangs.
HANG_TIMEOUT = 1800


def _run(args, cpu_seconds=300, env=None):
    """Run a Python script in a child process (forked from a pre-imported zygote:
    tests/python_processes.py), killed after cpu_seconds of its own CPU time."""
    r = python_processes.run(
        [sys.executable, os.path.join(SCRIPTS, "cpu_limited.py"), str(cpu_seconds), *args],
        capture_output=True,
        text=True,
        timeout=HANG_TIMEOUT,
        env=env,
        cwd=ROOT,
    )
    assert r.returncode != -signal.SIGXCPU, f"{args[0]} used more than {cpu_seconds} CPU seconds"
    return r


def test_mirrored_two_cpus_equals_one_device(fixtures_dir):
    r = _run([os.path.join(SCRIPTS, "mirrored_equivalence.py"), str(fixtures_dir)])
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["max_weight_diff"] < 1e-6
    for key in ("masked_lm_loss", "sentence_order_loss", "masked_lm_accuracy"):
        assert abs(out["one"][key] - out["mirrored"][key]) < 1e-5, f"{key}: {json.dumps(out)}"


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run_two_workers(argv, tmp_path, timeout=420):
    """Start two workers of a driver with a TF_CONFIG cluster on 127.0.0.1; return their logs."""
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs = []
    try:
        for index in range(2):
            env = dict(
                os.environ,
                TF_CONFIG=json.dumps(
                    {"cluster": cluster, "task": {"type": "worker", "index": index}}
                ),
            )
            log = open(tmp_path / f"worker{index}.log", "w")
            procs.append(
                (
                    python_processes.start(
                        [sys.executable, *argv],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                        cwd=ROOT,
                    ),
                    log,
                )
            )
        codes = [p.wait(timeout=timeout) for p, _ in procs]
    finally:
        for p, log in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
    logs = [(tmp_path / f"worker{i}.log").read_text() for i in range(2)]
    return codes, logs


def fingerprint(log):
    found = re.findall(r"weights sha256 ([0-9a-f]{64})", log)
    assert found, log[-3000:]
    return found[-1]


def pretraining_argv(fixtures_dir, out, *extra):
    """run_pretraining.py under MultiWorkerMirrored on the tiny fixture, 4 steps, plus `extra`."""
    return [
        os.path.join(ROOT, "run_pretraining.py"),
        "--strategy_type=multi_worker_mirrored",
        f"--albert_config_file={fixtures_dir / 'albert_tiny' / 'albert_config.json'}",
        f"--input_file={fixtures_dir / 'pretraining.tfrecord'}",
        f"--output_dir={out}",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--train_batch_size=8",
        "--num_train_steps=4",
        "--num_warmup_steps=1",
        "--save_checkpoints_steps=4",
        "--learning_rate=1e-3",
        "--seed=3",
        *extra,
    ]


def test_multi_worker_classifier_train_and_predict(fixtures_dir, data_dir, tmp_path):
    """Two workers agree after --do_train (one step per call: --iterations_per_loop=1, Keras'
    own train_function) and both predict every record, the prediction model restored from the
    object checkpoint. The engine's multi-step loop under MultiWorkerMirrored is
    test_flag_matrix.py's pretraining pair."""
    out = tmp_path / "out"
    argv = [
        os.path.join(ROOT, "run_classifier.py"),
        "--strategy_type=multi_worker_mirrored",
        *tiny_mrpc_flags(fixtures_dir, data_dir, out),
        "--train_step=4",
        "--warmup_step=1",
        "--save_checkpoints_steps=4",
        "--iterations_per_loop=1",
        "--do_train",
        "--do_predict",
        "--learning_rate=1e-4",
    ]
    codes, logs = run_two_workers(argv, tmp_path)
    assert codes == [0, 0], logs[0][-2000:] + logs[1][-2000:]
    assert fingerprint(logs[0]) == fingerprint(logs[1])
    assert "ckpt-4.index" in os.listdir(out)
    assert tf.train.latest_checkpoint(out).endswith("ckpt-4")
    assert len((out / "MRPC.tsv").read_text().splitlines()) == 51


def test_tpu_without_tpu_fails_with_one_clear_message(fixtures_dir, tmp_path):
    with pytest.raises(ValueError, match="needs a reachable TPU"):
        distribute.get_strategy(use_tpu=True)
    r = _run(
        [
            os.path.join(ROOT, "run_pretraining.py"),
            "--use_tpu",
            f"--albert_config_file={fixtures_dir / 'albert_tiny' / 'albert_config.json'}",
            f"--input_file={fixtures_dir / 'pretraining.tfrecord'}",
            f"--output_dir={tmp_path}",
        ],
        cpu_seconds=120,
    )
    assert r.returncode != 0
    assert "needs a reachable TPU" in r.stderr


def test_batch_must_divide_replicas_and_chief_rules(monkeypatch):
    class Fake:
        num_replicas_in_sync = 3

    with pytest.raises(ValueError, match="batch size 8 is not divisible by the 3 replicas"):
        distribute.per_replica_batch_size(8, Fake())
    cluster = {"worker": ["a:1", "b:2"]}
    monkeypatch.setenv(
        "TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 1}})
    )
    assert not distribute.is_chief()
    monkeypatch.setenv(
        "TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}})
    )
    assert distribute.is_chief()
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps(
            {"cluster": {**cluster, "chief": ["c:3"]}, "task": {"type": "worker", "index": 0}}
        ),
    )
    assert not distribute.is_chief()


def _opts(fixtures_dir, out, **kw):
    base = dict(
        input_file=str(fixtures_dir / "pretraining.tfrecord"),
        output_dir=str(out),
        init_checkpoint=str(fixtures_dir / "albert_tiny" / "model.ckpt-best"),
        max_seq_length=64,
        max_predictions_per_seq=10,
        train_batch_size=8,
        eval_batch_size=8,
        num_train_steps=4,
        num_warmup_steps=1,
        save_checkpoints_steps=4,
        iterations_per_loop=2,
        max_eval_steps=2,
        learning_rate=1e-3,
        optimizer="lamb",
        seed=5,
        verbose=0,
        do_eval=True,
    )
    base.update(kw)
    return PretrainingOptions(**base)


def test_pretraining_step_compiles_with_xla(fixtures_dir, tmp_path):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    result = pretrain(config, _opts(fixtures_dir, tmp_path, jit_compile=True))
    assert result["global_step"] == 4 and np.isfinite(result["masked_lm_loss"])


BF16_TOLERANCE = 0.05  # relative, on the eval losses after 4 steps


def test_bfloat16_loss_close_to_float32(fixtures_dir, tmp_path):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    full = pretrain(config, _opts(fixtures_dir, tmp_path / "f32"))
    distribute.set_precision("bfloat16")
    try:
        low = pretrain(config, _opts(fixtures_dir, tmp_path / "bf16"))
    finally:
        distribute.set_precision("float32")
    for key in ("masked_lm_loss", "sentence_order_loss"):
        assert abs(low[key] - full[key]) <= BF16_TOLERANCE * full[key], (key, low, full)
    assert keras.mixed_precision.global_policy().name == "float32"


@pytest.mark.parametrize(
    "max_eval_steps,batches",
    [
        (1, 1),
        (2, 2),
        (5, 2),  # more than the file holds: its 2 batches, each once
    ],
)
def test_eval_counts_each_batch_once(fixtures_dir, tmp_path, max_eval_steps, batches):
    """The eval reads min(max_eval_steps, batches in the file) batches, each once: without
    steps= Keras ran a step past the end of the (unknown-cardinality) dataset that counted a
    batch again, and under MirroredStrategy how much of it depended on timing."""
    from albert_tf.modeling.albert_model import AlbertPretrainer
    from albert_tf.pretraining.pretrain import make_evaluate_fn

    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    opts = _opts(fixtures_dir, tmp_path, eval_batch_size=16, max_eval_steps=max_eval_steps)
    strategy = distribute.get_strategy("one_device")
    with strategy.scope():
        model = AlbertPretrainer(config)
        model.compile(jit_compile=False)
    make_evaluate_fn(opts, strategy)(model)
    for metric in (model.sentence_order_accuracy, model.sentence_order_mean_loss):
        assert float(metric.count.numpy()) == 16 * batches  # 32 records, batches of 16


def test_the_batch_split_is_logged_once(caplog):
    """A run builds its dataset again each epoch: its batch split is said once, not each time."""
    import logging

    strategy = tf.distribute.get_strategy()
    make = lambda batch, ctx: tf.data.Dataset.range(4).batch(batch)
    with caplog.at_level(logging.INFO, logger="absl"):
        for _ in range(3):
            distribute.distribute_dataset(strategy, make, 7)
    assert sum("global batch 7 = 1 replicas × 7" in r.getMessage() for r in caplog.records) == 1
