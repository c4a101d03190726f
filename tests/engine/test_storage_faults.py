"""Storage faults end in one line naming the path and the cause: a full disk while writing a
feature cache or a checkpoint (a real 1 MB tmpfs where it can be mounted, an injected write
error everywhere), and a truncated latest checkpoint, which is reported by name while the run
falls back to the previous intact one (never silently to step 0). Freed space: same command
resumes."""

import errno
import os
import pathlib
import shutil
import subprocess
import sys

from absl import logging
import pytest
import python_processes
from shared_runs import copy_run_at_step, tiny_mrpc_flags
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.core import fileio
from albert_tf.core.errors import StorageError, TrainingError
from albert_tf.engine import records
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.tasks.glue.task import GlueTask, run_glue
from albert_tf.text.encoding import TextEncoder

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[2])
SPEC = {"a": ("int64", 2)}


@pytest.fixture(scope="module")
def glue(fixtures_dir, data_dir, tmp_path_factory):
    encoder = TextEncoder.from_files(str(fixtures_dir / "spm.model"), do_lower_case=True)
    task = GlueTask("mrpc", str(data_dir), encoder, 32, str(tmp_path_factory.mktemp("cache")))
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    return config, task


def _opts(fixtures_dir, out, **kw):
    base = dict(
        output_dir=str(out),
        init_checkpoint=str(fixtures_dir / "albert_tiny" / "model.ckpt-best"),
        train_batch_size=8,
        eval_batch_size=8,
        predict_batch_size=8,
        train_step=4,
        warmup_step=1,
        save_checkpoints_steps=2,
        iterations_per_loop=1,
        learning_rate=1e-3,
        seed=3,
        verbose=0,
        log_every_steps=10,
    )
    base.update(kw)
    return FineTuningOptions(**base)


def _step_of(path):
    reader = tf.compat.v1.train.NewCheckpointReader(path)
    return int(
        reader.get_tensor(
            next(
                k
                for k in reader.get_variable_to_shape_map()
                if k.startswith("optimizer/_iterations/")
            )
        )
    )


@pytest.fixture(scope="module")
def trained(glue, fixtures_dir, tmp_path_factory):
    """One 4-step training run (checkpoints 2 and 4) that the checkpoint tests copy and break."""
    config, task = glue
    out = tmp_path_factory.mktemp("trained") / "out"
    run_glue(config, task, _opts(fixtures_dir, out), do_train=True)
    return out


def test_truncated_latest_checkpoint_falls_back_to_the_previous_one(
    glue, trained, fixtures_dir, tmp_path, caplog
):
    config, task = glue
    out = tmp_path / "out"
    shutil.copytree(trained, out)
    data = out / "ckpt-4.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])  # a half-written upload
    with caplog.at_level(logging.WARNING):
        logging.get_absl_handler()  # absl logs through the logging module caplog watches
        result = run_glue(config, task, _opts(fixtures_dir, out, train_step=6), do_train=True)
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert (
        f"checkpoint {out / 'ckpt-4'} is broken" in warned
        and f"resuming from {out / 'ckpt-2'}" in warned
    )
    assert tf.train.latest_checkpoint(out).endswith("ckpt-6") and _step_of(str(out / "ckpt-6")) == 6
    assert result is not None


def test_every_checkpoint_broken_is_an_error_not_step_0(glue, trained, fixtures_dir, tmp_path):
    config, task = glue
    out = tmp_path / "out"
    copy_run_at_step(trained, out, 2)  # the run's folder after its step-2 checkpoint
    (out / "ckpt-2.data-00000-of-00001").write_bytes(b"")
    with pytest.raises(
        TrainingError, match=r"no checkpoint in .* can be restored: .*ckpt-2"
    ) as err:
        run_glue(config, task, _opts(fixtures_dir, out), do_train=True)
    assert "\n" not in str(err.value)
    assert tf.train.latest_checkpoint(out).endswith("ckpt-2")  # nothing overwritten


def test_full_disk_while_writing_a_cache_names_the_path_and_keeps_nothing(tmp_path, monkeypatch):
    """An injected ENOSPC (TensorFlow's ResourceExhaustedError, as a full disk gives it)."""

    class FullDisk:
        def __init__(self, path):
            self.path = path

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, record):
            raise tf.errors.ResourceExhaustedError(
                None, None, f"{self.path}; No space left on device"
            )

    monkeypatch.setattr(tf.io, "TFRecordWriter", FullDisk)
    cache = tmp_path / "cache"
    with pytest.raises(
        StorageError, match=r"cannot write .*/train-[0-9a-f]+\.tf_record: .*No space left"
    ) as err:
        records.cached_records(cache, "train", {"k": 1}, SPEC, lambda: [{"a": [1, 2]}])
    assert "\n" not in str(err.value) and os.listdir(cache) == []
    with pytest.raises(StorageError, match="cannot write .*: No space left on device"):
        with fileio.atomic_path(tmp_path / "x.txt"):
            raise OSError(errno.ENOSPC, "No space left on device")
    assert sorted(os.listdir(tmp_path)) == ["cache"]


def _mount_tmpfs(path, size):
    path.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def test_run_classifier_on_a_full_tmpfs_fails_in_one_line_then_resumes(
    fixtures_dir, data_dir, tmp_path
):
    """A real full filesystem (a 1 MB tmpfs with a filler file; root only: CI runs as root).
    The resumed run writes its checkpoint and the run folder's spm.model (256 KB) there."""
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "1m"):
        pytest.skip("cannot mount a tmpfs here (needs root); the injected-error tests cover it")
    try:
        filler = disk / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 1024):
                pass
        except OSError:  # full
            pass
        finally:
            os.close(fd)
        cmd = [
            sys.executable,
            os.path.join(ROOT, "run_classifier.py"),
            *tiny_mrpc_flags(fixtures_dir, data_dir, disk / "out"),
            f"--cached_dir={disk / 'cache'}",
            "--train_step=2",
            "--warmup_step=1",
            "--save_checkpoints_steps=2",
            "--do_train",
        ]
        full = python_processes.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path)
        last = full.stderr.strip().splitlines()[-1]
        assert full.returncode == 1 and "Traceback" not in full.stderr, full.stderr[-3000:]
        assert last.startswith("error: ") and "No space left on device" in last, last
        assert str(disk) in last, last  # names the path
        assert (
            not any(n.startswith(".") for n in os.listdir(disk / "cache"))
            if (disk / "cache").exists()
            else True
        )
        filler.unlink()
        again = python_processes.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert again.returncode == 0, again.stderr[-3000:]
        assert tf.train.latest_checkpoint(str(disk / "out")).endswith("ckpt-2")
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True, timeout=30)
        shutil.rmtree(disk, ignore_errors=True)
