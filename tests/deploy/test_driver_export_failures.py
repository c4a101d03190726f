"""The drivers' exports after training: a --dtype=bfloat16 run exports its float32 checkpoint
in every format, and an export that still fails ends as one `error:` line with no version
folder (nor an export folder it created) left behind."""

import os
import pathlib
import sys

import pytest
import python_processes

from albert_tf.core.errors import TrainingError
from albert_tf.deploy.exports import ExportOptions, exporter
from albert_tf.drivers.exports import export_fn_for

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "fixtures" / "albert_tiny"


def _classifier(tmp_path, data_dir, *flags):
    return python_processes.run(
        [
            sys.executable,
            str(ROOT / "run_classifier.py"),
            "--task_name=SST-2",
            f"--data_dir={data_dir}",
            f"--albert_config_file={TINY / 'albert_config.json'}",
            f"--init_checkpoint={TINY / 'model.ckpt-best'}",
            f"--spm_model_file={TINY / '30k-clean.model'}",
            f"--output_dir={tmp_path / 'out'}",
            f"--export_dir={tmp_path / 'export'}",
            "--max_seq_length=16",
            "--train_step=1",
            "--train_batch_size=2",
            "--do_train",
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )


def test_a_bfloat16_run_exports_its_float32_checkpoint(tmp_path, data_dir):
    """--dtype=bfloat16 (the TPU commands) with litert and onnx: exit 0, both files."""
    r = _classifier(tmp_path, data_dir, "--dtype=bfloat16", "--export_format=litert,onnx")
    assert r.returncode == 0, r.stderr[-3000:]
    (version,) = os.listdir(tmp_path / "export")
    assert {"model.tflite", "model.onnx", "README.md"} <= set(
        os.listdir(tmp_path / "export" / version)
    )
    from albert_tf.deploy.runtime import load_litert

    runner = load_litert(str(tmp_path / "export" / version / "model.tflite"))
    assert sorted(runner.input_names) == ["input_ids", "input_mask", "segment_ids"]


class _Task:
    """Just what the exporter reads of a task before a writer runs."""

    max_seq_length = 16


@pytest.mark.parametrize("formats", ["saved_model", "onnx"])
def test_an_export_failure_is_one_error_and_leaves_no_folder(tmp_path, formats):
    """Whatever an exporter raises after training (here pages of converter text) becomes one
    TrainingError naming the format; the export folder it would have made is gone."""

    def failing_export(model, task, export_dir, also=()):
        from albert_tf.tasks import serving

        def broken(folder, target):
            open(os.path.join(folder, "half.bin"), "wb").write(b"x")
            raise RuntimeError("converter failed:\n" + "loc(mlir line)\n" * 1260)

        return serving.write_version(export_dir, [broken, *also])

    export_dir = tmp_path / "export"
    options = ExportOptions(str(export_dir), formats=formats)
    export_fn = export_fn_for(exporter(failing_export, _Task(), options))
    if formats == "onnx":  # the real ONNX writer, given something that is no Keras model
        with pytest.raises(TrainingError, match=r"^--export_format=onnx: the export failed") as e:
            export_fn(object())
    else:
        with pytest.raises(TrainingError, match=r"^--export_format=saved_model: .*converter") as e:
            export_fn(object())
    assert "\n" not in str(e.value) and "--nodo_train" in str(e.value)
    assert not export_dir.exists()
