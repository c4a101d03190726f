"""Fixtures of the deployment tests: the tiny model's config and tokenizer, and the TFLite Task
Library's own environment (.ci/tasklib_env.sh), built once per version of that script under
~/.cache/albert_tf/ when pip can reach the package index; its tests skip, saying why, when not.
"""

import fcntl
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ENV_SCRIPT = ROOT / ".ci" / "tasklib_env.sh"
LEARNED_LENGTH = 64  # the fitted classifier's input length


def tasklib_venv() -> pathlib.Path:
    """~/.cache/albert_tf/tasklib-<hash of the env script> (ALBERT_TF_TASKLIB_VENV overrides)."""
    given = os.environ.get("ALBERT_TF_TASKLIB_VENV")
    if given:
        return pathlib.Path(given)
    digest = hashlib.sha256(ENV_SCRIPT.read_bytes()).hexdigest()[:12]
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
    return cache / "albert_tf" / f"tasklib-{digest}"


def _build(venv: pathlib.Path) -> str:
    """Builds the venv once (a file lock: pytest-xdist workers build it one at a time);
    returns the reason it cannot be built, or ""."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{venv}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / ".complete").exists():
            return ""
        try:
            r = subprocess.run(
                ["bash", str(ENV_SCRIPT), str(venv)], capture_output=True, text=True, timeout=600
            )
        except subprocess.TimeoutExpired:
            r = None
        if r is None or r.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            tail = "timed out" if r is None else (r.stderr.strip().splitlines() or ["?"])[-1]
            return f"the Task Library venv could not be built (no package index?): {tail}"
    return ""


@pytest.fixture(scope="session")
def tasklib_python():
    """The Task Library venv's python (built on first use), or a skip saying why not."""
    if sys.platform != "linux":
        pytest.skip("the Task Library venv script is for Linux (tflite-support's manylinux wheel)")
    venv = tasklib_venv()
    why = "" if (venv / ".complete").exists() else _build(venv)
    if why:
        pytest.skip(why)
    return str(venv / "bin" / "python")


@pytest.fixture(scope="session")
def learned_classifier():
    """(model, features, labels): the tiny model fitted to the SST-2 sample's 50 sentences at
    length 64 (150 full-set Adam steps, about 12 CPU-s) until it classifies all of them (it
    does from about step 100); made once per test run. A model whose attention has learned
    something: random weights attend almost uniformly, and hide what quantization does to
    attention."""
    from deploy_helpers import fit_classifier, sst2_sample_features

    feats, labels = sst2_sample_features(LEARNED_LENGTH)
    return fit_classifier(feats, labels, steps=150), feats, labels
