"""Preemption: run_classifier.py SIGKILLed at three points (run_pretraining.py SIGTERMed between
save points, then SIGKILLed) and restarted ends exactly where an unbroken run ends (every
variable, the optimizer step, dropout seeds and data order included). The interrupted runs use a
relative --output_dir, which the checkpoint state must resolve from the working folder."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import python_processes
from shared_runs import tiny_classifier_command
import tensorflow as tf

from albert_tf.engine.fault_injection import KILL_AT_ENV

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[2])
STEPS = 6


def _classifier(fixtures_dir, data_dir, out, tmp, split_records):
    return tiny_classifier_command(fixtures_dir, data_dir, out, tmp / "cache", steps=STEPS)


def _pretraining(fixtures_dir, data_dir, out, tmp, split_records):
    """The tiny model with encoder dropout (the fixture's is 0), so its RNG state is resumed too,
    on four files of four records: an epoch of two batches, its file order shuffled."""
    tiny = fixtures_dir / "albert_tiny"
    config = json.loads((tiny / "albert_config.json").read_text())
    config.update(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    (tmp / "albert_config.json").write_text(json.dumps(config))
    return [
        sys.executable,
        os.path.join(ROOT, "run_pretraining.py"),
        f"--albert_config_file={tmp / 'albert_config.json'}",
        f"--input_file={split_records(4, 4)}",
        f"--output_dir={out}",
        f"--init_checkpoint={tiny / 'model.ckpt-best'}",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--train_batch_size=8",
        f"--num_train_steps={STEPS}",
        "--num_warmup_steps=1",
        "--save_checkpoints_steps=2",
        "--iterations_per_loop=1",
        "--do_train",
        "--optimizer=adamw",
        "--learning_rate=1e-3",
        "--seed=7",
    ]


# (kill point, the latest checkpoint it leaves): mid-epoch (after step 3), during the write of
# ckpt-4 (data written, index not yet), right after ckpt-4 was saved; None: run to the end.
THREE_KILLS = (
    ("step:3", "ckpt-2"),
    ("checkpoint_written:4", "ckpt-2"),
    ("saved:4", "ckpt-4"),
    (None, f"ckpt-{STEPS}"),
)
# SIGTERM (a VM's preemption notice) after step 3: ckpt-3 saved at once, exit code 75; the rerun
# trains the catch-up steps to the save point 4, is SIGKILLed after step 5, and resumes from 4.
PREEMPTED = (("sigterm@step:3", "ckpt-3"), ("step:5", "ckpt-4"), (None, f"ckpt-{STEPS}"))
EXIT_CODES = {None: 0, "sigterm@step:3": 75}


def _start(cmd, log, kill_at=None, cwd=None):
    env = dict(os.environ)
    env.pop(KILL_AT_ENV, None)
    if kill_at:
        env[KILL_AT_ENV] = kill_at
    return python_processes.start(
        cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env, cwd=cwd or ROOT
    )


def _wait_all(procs, timeout=420):
    try:
        return [p.wait(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _variables(path):
    reader = tf.train.load_checkpoint(path)
    return {
        k: reader.get_tensor(k)
        for k in reader.get_variable_to_shape_map()
        if not k.startswith("_CHECKPOINTABLE_OBJECT_GRAPH")
    }


@pytest.mark.parametrize(
    "command, kills",
    [(_classifier, THREE_KILLS), (_pretraining, PREEMPTED)],
    ids=["run_classifier", "run_pretraining"],
)
def test_sigkill_then_resume_equals_unbroken_run(
    command, kills, fixtures_dir, data_dir, tmp_path, split_pretraining_records
):
    unbroken, broken = tmp_path / "unbroken", tmp_path / "broken"
    cmd = lambda out: command(fixtures_dir, data_dir, out, tmp_path, split_pretraining_records)
    run = _start(cmd(unbroken), tmp_path / "unbroken.log")
    assert _wait_all([run]) == [0], (tmp_path / "unbroken.log").read_text()[-3000:]
    # One run killed at each kill point in turn, each restart continuing from what the kill left;
    # --output_dir=broken, relative to the working folder tmp_path.
    for number, (kill_at, latest_after) in enumerate(kills):
        log = tmp_path / f"broken-{number}.log"
        run = _start(cmd("broken"), log, kill_at, cwd=tmp_path)
        assert _wait_all([run]) == [EXIT_CODES.get(kill_at, -9)], log.read_text()[-3000:]
        latest = tf.train.latest_checkpoint(broken)
        assert latest.endswith(latest_after), (kill_at, latest)
        _variables(latest)  # restorable
        if number:
            assert "resumed from" in log.read_text()
        if kill_at and kill_at.startswith("sigterm"):
            last = log.read_text().strip().splitlines()[-1]
            assert last.startswith(
                "error: preempted (SIGTERM) at step 3: saved broken/ckpt-3; "
                "run the same command again"
            ), last
    assert (
        broken / "albert_tf.lock"
    ).exists() is False  # the stale locks were taken over, then released
    want = _variables(unbroken / f"ckpt-{STEPS}")
    steps = [k for k in want if k.startswith("optimizer/_iterations/")]
    assert steps and int(want[steps[0]]) == STEPS
    assert any("seed_states" in k for k in want)  # dropout RNG state is part of the checkpoint
    got = _variables(broken / f"ckpt-{STEPS}")
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], atol=1e-6, rtol=0, err_msg=key)
