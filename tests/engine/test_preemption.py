"""Preemption: run_classifier.py SIGKILLed at three points and restarted ends exactly where an
unbroken run ends (every variable, the optimizer step, dropout seeds and data order included)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.engine.training import KILL_AT_ENV

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[2])
STEPS = 6


def _command(fixtures_dir, data_dir, out, cache):
    tiny = fixtures_dir / "albert_tiny"
    return [sys.executable, os.path.join(ROOT, "run_classifier.py"), "--task_name=mrpc",
            f"--data_dir={data_dir}", f"--albert_config_file={tiny / 'albert_config.json'}",
            f"--init_checkpoint={tiny / 'model.ckpt-best'}", f"--spm_model_file={fixtures_dir / 'spm.model'}",
            f"--output_dir={out}", f"--cached_dir={cache}", "--max_seq_length=32",
            "--train_batch_size=8", f"--train_step={STEPS}", "--warmup_step=1",
            "--save_checkpoints_steps=2", "--do_train", "--learning_rate=1e-3", "--seed=7"]


def _start(cmd, log, kill_at=None):
    env = dict(os.environ)
    env.pop(KILL_AT_ENV, None)
    if kill_at:
        env[KILL_AT_ENV] = kill_at
    return subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env, cwd=ROOT)


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
    return {k: reader.get_tensor(k) for k in reader.get_variable_to_shape_map()
            if not k.startswith("_CHECKPOINTABLE_OBJECT_GRAPH")}


@pytest.mark.xfail(strict=True, reason=(
    "known gap: under OneDeviceStrategy (the drivers' default) a run resumed from a checkpoint "
    "drifts from the unbroken run by ~1e-2 (every weight; the Transformer weights themselves are "
    "now in the checkpoint); the kill points, the restorable previous checkpoint and the "
    "stale-lock takeover all work."))
def test_sigkill_at_three_points_then_resume_equals_unbroken_run(fixtures_dir, data_dir, tmp_path):
    cache, unbroken, broken = tmp_path / "cache", tmp_path / "unbroken", tmp_path / "broken"
    run = _start(_command(fixtures_dir, data_dir, unbroken, cache), tmp_path / "unbroken.log")
    assert _wait_all([run]) == [0], (tmp_path / "unbroken.log").read_text()[-3000:]
    # One run killed three times, each restart continuing from what the kill left: mid-epoch
    # (after step 3), during the write of ckpt-4 (data written, index not yet), right after
    # ckpt-4 was saved; then it runs to the end.
    for kill_at, latest_after in (("step:3", "ckpt-2"), ("checkpoint_written:4", "ckpt-2"),
                                  ("saved:4", "ckpt-4"), (None, f"ckpt-{STEPS}")):
        log = tmp_path / f"broken-{kill_at}.log"
        run = _start(_command(fixtures_dir, data_dir, broken, cache), log, kill_at)
        assert _wait_all([run]) == [-9 if kill_at else 0], log.read_text()[-3000:]
        latest = tf.train.latest_checkpoint(broken)
        assert latest.endswith(latest_after), (kill_at, latest)
        _variables(latest)  # restorable
        if kill_at != "step:3":
            assert "resumed from" in log.read_text()
    assert (broken / "albert_tf.lock").exists() is False  # the stale locks were taken over, then released
    want = _variables(unbroken / f"ckpt-{STEPS}")
    steps = [k for k in want if k.startswith("optimizer/_iterations/")]
    assert steps and int(want[steps[0]]) == STEPS
    assert any("seed_states" in k for k in want)  # dropout RNG state is part of the checkpoint
    got = _variables(broken / f"ckpt-{STEPS}")
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], atol=1e-6, rtol=0, err_msg=key)
