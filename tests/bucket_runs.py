"""Driver runs on a bucket: TensorFlow's in-memory ram:// filesystem stands in for gs://
(docs/cloud_tpu.md). ram:// lives in one process, so a driver runs its command lines in ONE
subprocess (tests/scripts/ram_runner.py) whose working folder must stay empty. The drivers'
end-to-end tests (tests/tasks/*) run this way: one run checks both what the driver writes and
that every path may be a bucket."""

import json
import os
import pathlib
import sys

import python_processes

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tests" / "scripts" / "ram_runner.py"
B = "ram://bucket"  # each runner process has its own ram://, so one name serves every test


def run_on_bucket(tmp_path, driver, uploads, cases, trees=(), texts=(), sha256=(), downloads=()):
    """Run `cases` (argv lists) through `driver` in one process on ram://.

    Args:
        tmp_path: A local folder for the plan, the results and the empty working folder.
        driver: The driver script, relative to the repository root.
        uploads: [local, remote] pairs copied to the bucket first.
        cases: The command lines (without the program name), run in order.
        trees: Remote prefixes whose files are listed.
        texts: Remote files whose text is returned.
        sha256: Remote files whose SHA-256 is returned.
        downloads: [remote prefix, local folder] pairs copied back after the cases.

    Returns:
        The results JSON: {"cases": [{"argv", "code", "stderr"}], "trees", "texts", "sha256"}.
    """
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)  # a once_per_test_run retry finds it (empty) again
    plan, results = tmp_path / "plan.json", tmp_path / "results.json"
    plan.write_text(
        json.dumps(
            {
                "driver": str(ROOT / driver),
                "uploads": [[str(a), b] for a, b in uploads],
                "cases": cases,
                "trees": list(trees),
                "texts": list(texts),
                "sha256": list(sha256),
                "downloads": [[a, str(b)] for a, b in downloads],
            }
        )
    )
    proc = python_processes.run(
        [sys.executable, str(RUNNER), str(plan), str(results)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert os.listdir(cwd) == [], "written under the working folder"
    return json.loads(results.read_text())


def assert_ok(case):
    """A case of `run_on_bucket` exited 0 (else its stderr's end is the message)."""
    assert case["code"] == 0, case["stderr"][-3000:]


def model_uploads(fixtures_dir):
    """The tiny fixture release and spm.model, as `run_on_bucket` uploads."""
    tiny = fixtures_dir / "albert_tiny"
    return [[str(tiny), f"{B}/albert_tiny"], [str(fixtures_dir / "spm.model"), f"{B}/spm.model"]]


def model_flags():
    """The drivers' model flags on the uploaded tiny release (`model_uploads`)."""
    return [
        f"--albert_config_file={B}/albert_tiny/albert_config.json",
        f"--init_checkpoint={B}/albert_tiny/model.ckpt-best",
        f"--spm_model_file={B}/spm.model",
    ]


def history_steps(text):
    """The global steps of an eval_history.json's text."""
    return [h["global_step"] for h in json.loads(text)]


def checkpoint_steps(tree):
    """The steps of the ckpt-N checkpoints in a tree listing, sorted."""
    return sorted(int(f[5:-6]) for f in tree if f.startswith("ckpt-") and f.endswith(".index"))
