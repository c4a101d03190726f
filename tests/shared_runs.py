"""Work that tests share: one driver run per test run, not one per pytest-xdist worker, and the
commands of the short driver runs that several test modules make."""

import fcntl
import json
import os
import pathlib
import re
import sys

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[1])


def once_per_test_run(tmp_path_factory, name, make):
    """`make(folder)` once per test run, however many pytest-xdist workers ask: the first makes
    it (the others wait on a lock) and every worker gets its JSON result and the same folder.

    Args:
        tmp_path_factory: pytest's fixture (its base folder's parent is shared by the workers).
        name: The folder's name.
        make: `make(folder) -> JSON-able result`; a failure is retried by the next worker.

    Returns:
        (result, folder).
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' base folders sit side by side in it
    folder, done = root / name, root / f"{name}.result.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            folder.mkdir(exist_ok=True)
            done.write_text(json.dumps(make(folder)))
    return json.loads(done.read_text()), folder


def tiny_mrpc_flags(fixtures_dir, data_dir, out):
    """run_classifier.py's flags of the tiny fixture model on the MRPC sample (length 32, batch 8).

    Args:
        fixtures_dir: tests/data/fixtures.
        data_dir: tests/data/samples.
        out: --output_dir.

    Returns:
        The flags.
    """
    tiny = fixtures_dir / "albert_tiny"
    return [
        "--task_name=mrpc",
        f"--data_dir={data_dir}",
        f"--albert_config_file={tiny / 'albert_config.json'}",
        f"--init_checkpoint={tiny / 'model.ckpt-best'}",
        f"--spm_model_file={fixtures_dir / 'spm.model'}",
        f"--output_dir={out}",
        "--max_seq_length=32",
        "--train_batch_size=8",
    ]


def tiny_classifier_command(fixtures_dir, data_dir, out, cache, *extra, steps=6):
    """The argv of a short run_classifier.py training run (`tiny_mrpc_flags`), a checkpoint
    every 2 of `steps` steps: the preemption and JAX engine tests' run.

    Args:
        fixtures_dir: tests/data/fixtures.
        data_dir: tests/data/samples.
        out: --output_dir.
        cache: --cached_dir.
        *extra: More flags.
        steps: --train_step.

    Returns:
        The argv, starting with this Python.
    """
    return [
        sys.executable,
        os.path.join(ROOT, "run_classifier.py"),
        *tiny_mrpc_flags(fixtures_dir, data_dir, out),
        f"--cached_dir={cache}",
        f"--train_step={steps}",
        "--warmup_step=1",
        "--save_checkpoints_steps=2",
        "--do_train",
        "--learning_rate=1e-3",
        "--seed=7",
        *extra,
    ]


def copy_run_at_step(run_dir, out, step):
    """A copy of a finished training run's folder as it was right after its checkpoint `step`:
    the later checkpoints' files gone, the checkpoint state naming ckpt-<step> alone (a test that
    goes on from a run shares it, not a run of its own).

    Args:
        run_dir: pathlib.Path. The finished run's --output_dir (TensorFlow checkpoints).
        out: pathlib.Path. The new folder (must not exist).
        step: int. The checkpoint the copy ends at.
    """
    import shutil

    import tensorflow as tf

    shutil.copytree(run_dir, out)
    for name in os.listdir(out):
        number = re.match(r"ckpt-(\d+)\.", name)
        if name == "checkpoint" or (number and int(number.group(1)) > step):
            os.remove(out / name)
    tf.compat.v1.train.update_checkpoint_state(str(out), f"ckpt-{step}", [f"ckpt-{step}"])
