"""The shared export pieces (albert_tf/tasks/serving.py): the save replaces a previous export
whole or not at all, with the README on loading; the export helper; load_saved_model."""

import os
import pathlib

import pytest
import tensorflow as tf

from albert_tf import load_saved_model
from albert_tf.tasks import serving


class _Echo(tf.Module):
    def __init__(self, suffix):
        super().__init__()
        self.suffix = tf.constant(suffix)
        self.serve = tf.function(
            lambda text: {"out": text + self.suffix},
            input_signature=[tf.TensorSpec([None], tf.string)],
        )


def _save(module, path):
    return serving.save_module(
        module,
        module.serve.get_concrete_function(),
        path,
        "echo",
        "`text` [batch]",
        "`out` [batch]",
    )


def _run(path):
    return load_saved_model(path).signatures["serving_default"](text=tf.constant(["a"]))["out"]


def test_each_export_is_a_new_version_whole_or_not_at_all(tmp_path, monkeypatch):
    first = _save(_Echo("1"), tmp_path / "export")
    assert os.path.dirname(first) == str(tmp_path / "export") and os.path.basename(first).isdigit()
    assert _run(first).numpy().tolist() == [b"a1"]
    readme = (pathlib.Path(first) / "README.md").read_text()
    assert "import tensorflow_text" in readme and 'text=tf.constant(["..."])' in readme
    second = _save(_Echo("2"), tmp_path / "export")
    assert int(os.path.basename(second)) > int(os.path.basename(first))  # same second: +1
    assert _run(tmp_path / "export").numpy().tolist() == [b"a2"]  # the newest version
    assert _run(first).numpy().tolist() == [b"a1"]  # an export is never overwritten

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tf.saved_model, "save", broken)
    with pytest.raises(OSError):
        _save(_Echo("3"), tmp_path / "export")
    assert _run(tmp_path / "export").numpy().tolist() == [b"a2"]
    # no temporary folder or half version left
    assert sorted(os.listdir(tmp_path / "export")) == sorted(map(os.path.basename, (first, second)))
    with pytest.raises(FileNotFoundError, match="neither a SavedModel"):
        serving.latest_export(tmp_path)


def test_exporter_and_tokenizer_need_their_inputs():
    assert serving.saved_model_exporter(lambda m, t, d: d, "task", None) is None
    assert serving.saved_model_exporter(lambda m, t, d: (m, t, d), "task", "dir")("model") == (
        "model",
        "task",
        "dir",
    )
    with pytest.raises(ValueError, match="^export_dir needs spm_model_file"):
        serving.graph_tokenizer(None)
