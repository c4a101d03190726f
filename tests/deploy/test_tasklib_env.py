""".ci/tasklib_env.sh DIR (docs/deployment.md tells users to run it) never wipes a folder it
did not make, and a failed run leaves nothing of itself behind."""

import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "tasklib_env.sh"
# pip with no index (nor the machine's pip config): the run fails at its download, after
# making the venv
NO_INDEX = {"PIP_OPTS": "--no-index", "PIP_CONFIG_FILE": os.devnull}


def _script(folder, env=None):
    return subprocess.run(
        ["bash", str(SCRIPT), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_a_folder_of_the_users_is_refused_and_kept(tmp_path):
    (tmp_path / "notes.txt").write_text("keep me\n")
    r = _script(tmp_path)
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {tmp_path} exists and is not a Task Library venv"), r.stderr
    assert os.listdir(tmp_path) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "keep me\n"


def test_a_failed_install_removes_what_it_made(tmp_path):
    new, empty = tmp_path / "new", tmp_path / "empty"
    empty.mkdir()
    for folder in (new, empty):
        r = _script(folder, NO_INDEX)
        assert r.returncode != 0, r.stdout
        assert "tflite-support" in r.stderr, r.stderr[-2000:]
    assert not new.exists()
    assert empty.is_dir() and os.listdir(empty) == []
