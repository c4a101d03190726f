"""Atomic writes keep the user's umask (not mkstemp's 0600) and leave no temporary files."""
import contextlib
import os
import stat

import pytest

from albert_tf.engine.records import cached_records, write_records
from albert_tf.fileio import atomic_path, write_text_atomic
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
        written = [write_text_atomic(tmp_path / "t.txt", "text"),
                   write_eval_results(tmp_path / "eval_results.txt", {"f1": 1.0})]
        written += list(write_predictions(tmp_path / "pred", {"q": "a"}, {"q": []}).values())
        write_records(tmp_path / "r.tf_record", [{"a": [1, 2]}], SPEC)
        cached, _ = cached_records(tmp_path / "cache", "train", {"k": 1}, SPEC,
                                   lambda: [{"a": [3, 4]}])
        written += [tmp_path / "r.tf_record", cached, cached + ".json"]
    assert mode(tmp_path / "plain.txt") == 0o666 & ~mask
    assert {os.fspath(p): mode(p) for p in written} == {os.fspath(p): 0o666 & ~mask for p in written}


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
