"""Atomic writes keep the user's umask (not mkstemp's 0600) and leave no temporary files."""

import contextlib
import os
import stat

import numpy as np
import pytest

from albert_tf.core.fileio import atomic_path, write_text_atomic
from albert_tf.engine.records import cached_records, write_records
from albert_tf.tasks.squad.evaluate import write_eval_results
from albert_tf.tasks.squad.postprocess import write_predictions

SPEC = {"a": ("int64", 2)}


@contextlib.contextmanager
def umask(value):
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_atomic_writes_honour_the_umask(tmp_path, mask):
    with umask(mask):
        with open(tmp_path / "plain.txt", "w") as f:
            f.write("x")
        written = [
            write_text_atomic(tmp_path / "t.txt", "text"),
            write_eval_results(tmp_path / "eval_results.txt", {"f1": 1.0}),
        ]
        written += list(write_predictions(tmp_path / "pred", {"q": "a"}, {"q": []}).values())
        write_records(tmp_path / "r.tf_record", [{"a": [1, 2]}], SPEC)
        cached, _ = cached_records(
            tmp_path / "cache", "train", {"k": 1}, SPEC, lambda: [{"a": [3, 4]}]
        )
        written += [tmp_path / "r.tf_record", cached, cached + ".json"]
    assert mode(tmp_path / "plain.txt") == 0o666 & ~mask
    assert {os.fspath(p): mode(p) for p in written} == {
        os.fspath(p): 0o666 & ~mask for p in written
    }


def test_atomic_path_replaces_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    write_text_atomic(target, "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            with open(tmp, "w") as f:
                f.write("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]
    with atomic_path(tmp_path / "new" / "deep.txt") as tmp:
        assert os.path.dirname(tmp) == str(tmp_path / "new") and os.path.getsize(tmp) == 0
        with open(tmp, "w") as f:
            f.write("whole")
    assert (tmp_path / "new" / "deep.txt").read_text() == "whole"
    assert os.listdir(tmp_path / "new") == ["deep.txt"]


# --- object-store semantics on ram://, the offline stand-in for a bucket (docs/cloud_tpu.md) ---
def test_remote_files_are_replaced_whole_and_failed_writes_leave_nothing(ram_bucket):
    from albert_tf.core import fileio

    target = f"{ram_bucket}/run/notes.txt"
    fileio.write_text(target, "a longer first version")
    fileio.write_text(target, "second")  # replaced, not appended to (ram:// alone appends)
    assert fileio.read_text(target) == "second"
    with pytest.raises(RuntimeError):
        with fileio.atomic_path(f"{ram_bucket}/run/half.txt") as tmp:
            assert tmp == f"{ram_bucket}/run/half.txt"  # written straight: no rename on a bucket
            with fileio.open_file(tmp, "w") as f:
                f.write("half")
            raise RuntimeError("interrupted")
    assert fileio.listdir(f"{ram_bucket}/run") == ["notes.txt"]
    fileio.write_npz(f"{ram_bucket}/run/a.npz", {"x": np.arange(3)})
    with fileio.local_copy(f"{ram_bucket}/run/a.npz") as local, np.load(local) as got:
        np.testing.assert_array_equal(got["x"], np.arange(3))
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        fileio.read_text(f"{ram_bucket}/run/missing.txt")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        fileio.open_text(f"{ram_bucket}/run/missing.txt")


def test_remote_text_is_streamed_with_universal_newlines(ram_bucket, tmp_path):
    from albert_tf.core import fileio

    body = "one\r\ntwo\rthree\nfour é\n" * 50000  # larger than one read buffer
    (tmp_path / "t.txt").write_bytes(body.encode("utf-8"))
    remote = fileio.copy(tmp_path / "t.txt", f"{ram_bucket}/t.txt")
    with fileio.open_text(remote) as f, open(tmp_path / "t.txt", encoding="utf-8") as local:
        assert list(f) == list(local)
    with fileio.open_binary(remote) as f:
        assert f.readline() == b"one\r\n"


def test_remote_folders_and_ram_quirks(ram_bucket):
    from albert_tf.core import fileio

    fileio.write_text(f"{ram_bucket}/run/ckpt-1.index", "i")
    fileio.write_text(f"{ram_bucket}/run/eval_results.txt", "r")
    fileio.makedirs(f"{ram_bucket}/run/eval")
    assert not fileio.is_folder(f"{ram_bucket}/run/ckpt-1")  # ram:// calls a prefix a folder
    assert fileio.is_folder(f"{ram_bucket}/run/eval") and fileio.is_folder(f"{ram_bucket}/run")
    assert fileio.listdir(f"{ram_bucket}/run/eval") == []  # not "_results.txt"
    assert fileio.create_exclusive(f"{ram_bucket}/run/lock", "mine")
    assert not fileio.create_exclusive(f"{ram_bucket}/run/lock", "theirs")
    assert fileio.read_text(f"{ram_bucket}/run/lock") == "mine"


def test_output_folder_uploads_its_marker_last_and_nothing_on_failure(ram_bucket, monkeypatch):
    from albert_tf.core import fileio

    uploaded = []
    real_copy = fileio.copy
    monkeypatch.setattr(
        fileio, "copy", lambda src, dst, **kw: uploaded.append(dst) or real_copy(src, dst, **kw)
    )
    out = f"{ram_bucket}/export"
    with fileio.output_folder(out, last=("saved_model.pb",)) as local:
        assert not fileio.is_remote(local)
        for name in ("saved_model.pb", "a.txt", "variables/v.index", "z.txt"):
            os.makedirs(os.path.dirname(os.path.join(local, name)), exist_ok=True)
            with open(os.path.join(local, name), "w") as f:
                f.write(name)
    assert uploaded[-1] == f"{out}/saved_model.pb" and len(uploaded) == 4
    assert not os.path.exists(local)  # the local scratch folder is gone
    with pytest.raises(RuntimeError):
        with fileio.output_folder(f"{ram_bucket}/failed") as local:
            with open(os.path.join(local, "x.txt"), "w") as f:
                f.write("x")
            raise RuntimeError("interrupted")
    assert not fileio.exists(f"{ram_bucket}/failed/x.txt")


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_huggingface_output_follows_the_umask(tmp_path, fixtures_dir, mask):
    """safetensors (and tempfile) make 0600 files; every written file follows the umask."""
    from albert_tf import convert_model

    with umask(mask):
        convert_model(
            fixtures_dir / "albert_tiny" / "model.ckpt-best", tmp_path / "hf", "huggingface"
        )
    files = sorted(os.listdir(tmp_path / "hf"))
    assert "model.safetensors" in files
    assert {f: mode(tmp_path / "hf" / f) for f in files} == {f: 0o666 & ~mask for f in files}
