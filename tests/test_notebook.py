"""examples/finetune_in_a_notebook.ipynb runs top to bottom (tiny release, few steps): every cell
must succeed, and it is stored without outputs."""

import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "finetune_in_a_notebook.ipynb"


def test_notebook_is_stored_without_outputs():
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)


def test_notebook_runs(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="nbformat (a test extra) is not installed")
    nbclient = pytest.importorskip("nbclient", reason="nbclient (a test extra) is not installed")
    pytest.importorskip("ipykernel", reason="ipykernel (a test extra) is not installed")
    monkeypatch.setenv("NOTEBOOK_WORK_DIR", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=300,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    assert (tmp_path / "curves.png").stat().st_size > 0
    assert (tmp_path / "sst2_saved_model" / "saved_model.pb").exists()
    assert (tmp_path / "huggingface" / "model.safetensors").exists()
