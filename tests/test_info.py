"""The environment report (`python -m albert_tf.info`, albert_tf/core/environment.py): it names
every item a bug report needs, with the versions pip installed; it finds the known
incompatibilities on made-up version data; the tested ranges are the ones pyproject.toml
declares; and a `--verbose_errors` trace ends with its short block, then the one `error:` line
(a driver's: tests/test_bad_input.py; a bug's and the converter's: here)."""

from importlib import metadata
import os
import subprocess
import sys
import tomllib

from absl import flags
from packaging.requirements import Requirement
import pytest

from albert_tf import convert
from albert_tf.core import environment
from albert_tf.core.environment import Environment, incompatibilities, short_block
from albert_tf.core.errors import InputError
from albert_tf.drivers import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOOD = {"tensorflow": "2.20.0", "tensorflow-text": "2.20.1", "keras": "3.15.1"}


@pytest.fixture(scope="module")
def info_output(tmp_path_factory):
    venv = tmp_path_factory.mktemp("tasklib")
    (venv / ".complete").write_text("")
    env = dict(os.environ, ALBERT_TF_TASKLIB_VENV=str(venv), PYTHONPATH=ROOT)
    r = subprocess.run(
        [sys.executable, "-m", "albert_tf.info"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout, str(venv)


def _row(text, label):
    rows = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(label + " ")]
    assert rows, f"no row {label!r} in:\n{text}"
    return rows[0][len(label) :].strip()


def test_info_names_every_item_with_the_installed_versions(info_output):
    text, venv = info_output
    sections = [ln.split(" (")[0] for ln in text.splitlines() if not ln.startswith(" ")]
    assert sections == ["versions", "devices", "optional extras", "incompatibilities"]
    assert _row(text, "Python").startswith(sys.version.split()[0])
    assert _row(text, "TensorFlow").startswith(metadata.version("tensorflow"))
    assert _row(text, "tensorflow-text") == metadata.version("tensorflow-text")
    assert _row(text, "Keras").startswith(metadata.version("keras") + ", backend ")
    for label in ("keras-hub", "jax", "torch"):
        try:
            expected = metadata.version(label)
        except metadata.PackageNotFoundError:
            expected = "not installed"
        assert _row(text, label) == expected
    for distribution, module in environment.EXTRAS:
        try:
            expected = metadata.version(distribution) + " imports"
            __import__(module)
        except metadata.PackageNotFoundError:
            expected = "not installed"
        assert _row(text, distribution) == expected
    devices = text.split("\ndevices\n")[1].split("\noptional extras")[0]
    assert "CPU:0" in _row(devices, "TensorFlow").split(", ")
    if "not installed" not in _row(text, "jax"):
        assert "cpu:0" in _row(devices, "jax").split(", ")
    assert _row(text, "Task Library venv") == f"{venv} (built)"


def test_an_extra_that_fails_to_import_says_why():
    assert environment.importable("no_such_module_albert_tf") == (
        "No module named 'no_such_module_albert_tf'"
    )


def test_a_clean_environment_has_no_incompatibilities():
    assert incompatibilities(Environment("3.11.7", dict(GOOD))) == []
    for spm, protobuf in (("0.2.2", "5.29.6"), ("0.2.3", "7.36.2")):
        versions = dict(GOOD, sentencepiece=spm, protobuf=protobuf)
        assert incompatibilities(Environment("3.11.7", versions)) == []
    for tf in ("2.18.1", "2.21.0"):
        env = Environment("3.11.7", dict(GOOD, tensorflow=tf, **{"tensorflow-text": tf}))
        assert incompatibilities(env) == []


@pytest.mark.parametrize(
    "change, backend, expected",
    [
        ({"tensorflow-text": "2.19.0"}, "tensorflow", "differ in minor version"),
        ({"tensorflow-tpu": "2.20.0"}, "tensorflow", "tensorflow 2.20.0 and tensorflow-tpu 2.20.0"),
        ({"tensorflow": "2.17.1", "tensorflow-text": "2.17.0"}, "tensorflow", "outside the tested"),
        ({"keras": "3.8.0"}, "tensorflow", "Keras 3.8.0 is outside the tested range"),
        ({}, "jax", "KERAS_BACKEND is jax but jax is not installed"),
        ({}, "torch", "KERAS_BACKEND is torch but torch is not installed"),
        ({"jax": "0.10.2", "jaxlib": "0.9.0"}, "tensorflow", "jax 0.10.2 and jaxlib 0.9.0"),
        ({"sentencepiece": "0.2.3", "protobuf": "5.29.6"}, "tensorflow", "sentencepiece==0.2.2"),
    ],
)
def test_incompatibilities_on_made_up_versions(change, backend, expected):
    found = incompatibilities(Environment("3.11.7", dict(GOOD, **change), backend))
    assert len(found) == 1 and expected in found[0], found


def test_no_tensorflow_at_all_is_reported():
    found = incompatibilities(Environment("3.11.7", {"keras": "3.15.1"}))
    assert found == ["TensorFlow is not installed (albert_tf needs tensorflow >=2.18,<2.22)"]


def test_the_tested_ranges_are_the_ones_pyproject_declares():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        declared = tomllib.load(f)["project"]["dependencies"]
    ranges = {(r := Requirement(d)).name: str(r.specifier) for d in declared}
    for name, spec in environment.SUPPORTED.items():
        assert (
            Requirement(f"{name}{spec}").specifier == Requirement(f"{name}{ranges[name]}").specifier
        )


def test_the_short_block_lists_versions_and_problems():
    env = Environment("3.11.7", dict(GOOD, **{"tensorflow-text": "2.19.0"}), "jax")
    lines = short_block(env).splitlines()
    assert lines[0].startswith("environment (python -m albert_tf.info")
    assert "tensorflow 2.20.0" in lines[1] and "Keras 3.15.1 (backend jax)" in lines[1]
    assert [ln for ln in lines if ln.startswith("  incompatible: ")] == [
        "  incompatible: " + p for p in incompatibilities(env)
    ]
    assert len(lines) == 2 + len(incompatibilities(env)) and len(lines) > 2


# A driver's --verbose_errors trace (traceback, the block, the one error line last):
# test_bad_input.py's test_verbose_errors_keeps_the_traceback, one case of its runner process.


def test_a_bug_under_verbose_errors_ends_with_the_block_too(capsys):
    def main(argv):
        raise RuntimeError("a bug")

    try:
        with pytest.raises(SystemExit) as stop:
            cli.run(main, argv=["prog", "--verbose_errors"])
    finally:
        flags.FLAGS["verbose_errors"].value = False
    lines = capsys.readouterr().err.strip().splitlines()
    block = short_block().splitlines()
    assert stop.value.code == 1
    assert lines[-1] == "error: RuntimeError: a bug"
    assert lines[-1 - len(block) : -1] == block
    assert "Traceback (most recent call last):" in lines


def test_the_converter_verbose_trace_ends_with_the_block_too(tmp_path, capsys):
    missing = tmp_path / "no_such_input"
    code = convert.main(
        ["--input", str(missing), "--output", str(tmp_path / "x.keras"), "--verbose_errors"]
    )
    lines = capsys.readouterr().err.strip().splitlines()
    block = short_block().splitlines()
    assert code == 2 and lines[-1].startswith("error: ")
    assert lines[-1 - len(block) : -1] == block
    assert "Traceback (most recent call last):" in lines


def test_a_forward_only_backend_refuses_what_it_cannot_run(monkeypatch):
    monkeypatch.setattr(environment, "keras_backend", lambda: "torch")
    with pytest.raises(InputError, match=r"^export needs KERAS_BACKEND=tensorflow .*=torch, on"):
        environment.check_backend_runs("export")
    monkeypatch.setattr(environment, "keras_backend", lambda: "jax")
    environment.check_backend_runs("export")
