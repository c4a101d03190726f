"""The training engine on Keras' JAX backend, through run_classifier.py in JAX processes: it
trains, evaluates and predicts; SIGKILLed mid-run and restarted it ends exactly where an unbroken
run ends (every variable, the optimizer step and the dropout seed state); on two forced host
devices with --strategy_type=mirrored, same global batch, its eval losses equal one device's (the
fixture has dropout 0).

Not marked `backends`: the processes run JAX whatever backend the test process runs, so the
suite runs these once (in its TensorFlow step), not again in the JAX step."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest
import python_processes
from shared_runs import once_per_test_run, tiny_classifier_command

from albert_tf.engine.fault_injection import KILL_AT_ENV

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[2])
STEPS = 6


def _command(fixtures_dir, data_dir, out, cache, *extra):
    return tiny_classifier_command(
        fixtures_dir, data_dir, out, cache, "--do_eval", *extra, steps=STEPS
    )


def _run(cmd, log, *, kill_at=None, devices=1, cwd=None):
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=ROOT)
    env.pop(KILL_AT_ENV, None)
    if kill_at:
        env[KILL_AT_ENV] = kill_at
    if devices > 1:  # read when JAX starts: the child's own devices
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    with open(log, "w") as f:
        code = python_processes.run(
            cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd or ROOT, timeout=600
        ).returncode
    return code, pathlib.Path(log).read_text()


def _state(path):
    """{group/path: array} of a JAX run's checkpoint file."""
    with np.load(path) as data:
        index = json.loads(bytes(data["index"]).decode())
        return {
            f"{group}/{name}": data[f"{group}/{i}"]
            for group, entries in index.items()
            for i, (name, _) in enumerate(entries)
        }


def _eval_losses(out):
    history = json.loads((out / "eval_history.json").read_text())
    return {h["global_step"]: h["loss"] for h in history}


@pytest.fixture(scope="module")
def unbroken(fixtures_dir, data_dir, tmp_path_factory):
    """One unbroken JAX run on one device, made once per test run (the xdist workers share it):
    train (evaluating each checkpoint), then evaluate the best checkpoint and predict the test
    set."""

    def make(folder):
        cmd = _command(fixtures_dir, data_dir, folder / "out", folder / "cache", "--do_predict")
        code, log = _run(cmd, folder / "run.log")
        assert code == 0, log[-3000:]
        return log

    log, folder = once_per_test_run(tmp_path_factory, "jax_unbroken", make)
    return folder / "out", log


def test_jax_run_trains_evaluates_and_predicts(unbroken):
    out, log = unbroken
    assert "strategy KerasDistribution" in log  # the JAX path, not tf.distribute
    assert (out / f"ckpt-{STEPS}.weights.npz").exists()
    assert not list(out.glob("ckpt-*.index"))  # no tf.train.Checkpoint on JAX
    assert (out / "checkpoint").read_text().startswith(f'model_checkpoint_path: "ckpt-{STEPS}"')
    assert sorted(_eval_losses(out)) == [2, 4, STEPS]
    assert (out / "model.ckpt-best.index").exists()  # Google's TF1 format, as on TensorFlow
    state = _state(out / f"ckpt-{STEPS}.weights.npz")
    steps = [v for k, v in state.items() if k.startswith("optimizer/") and "iteration" in k]
    assert [int(s) for s in steps] == [STEPS]
    assert any(k.endswith("seed_generator_state") for k in state)
    predictions = (out / "test_results.tsv").read_text().strip().splitlines()
    assert len(predictions) > 1
    assert "final eval: accuracy" in log


def test_jax_run_resumes_exactly_after_sigkill(unbroken, fixtures_dir, data_dir, tmp_path):
    """Killed after step 3 (ckpt-2 the latest), then run to the end: same state as unbroken.
    --output_dir is relative to the working folder, as a resumed command often gives it."""
    cmd = _command(fixtures_dir, data_dir, "broken", tmp_path / "cache")
    code, log = _run(cmd, tmp_path / "killed.log", kill_at="step:3", cwd=tmp_path)
    assert code == -9, log[-3000:]
    assert 'model_checkpoint_path: "ckpt-2"' in (tmp_path / "broken" / "checkpoint").read_text()
    code, log = _run(cmd, tmp_path / "resumed.log", cwd=tmp_path)
    assert code == 0, log[-3000:]
    assert "resumed from broken/ckpt-2" in log
    want = _state(unbroken[0] / f"ckpt-{STEPS}.weights.npz")
    got = _state(tmp_path / "broken" / f"ckpt-{STEPS}.weights.npz")
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], atol=1e-6, rtol=0, err_msg=key)
    assert _eval_losses(tmp_path / "broken") == pytest.approx(_eval_losses(unbroken[0]))


def test_jax_mirrored_on_two_devices_equals_one_device(unbroken, fixtures_dir, data_dir, tmp_path):
    """Same global batch of 8, split 4 + 4 over two forced host devices by DataParallel."""
    cmd = _command(
        fixtures_dir, data_dir, tmp_path / "out", tmp_path / "cache", "--strategy_type=mirrored"
    )
    code, log = _run(cmd, tmp_path / "two.log", devices=2)
    assert code == 0, log[-3000:]
    assert "with 2 replicas in sync" in log
    two, one = _eval_losses(tmp_path / "out"), _eval_losses(unbroken[0])
    assert sorted(two) == sorted(one)
    for step in one:
        assert two[step] == pytest.approx(one[step], rel=1e-5, abs=1e-6), step
