"""Python examples of the docs, run as scripts the way a reader would run them."""

import pathlib
import re
import shutil
import sys

import python_processes

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python_blocks(doc):
    """The ```python blocks of a docs/ page, in order."""
    return re.findall(
        r"```python\n(.*?)```", (ROOT / "docs" / doc).read_text(encoding="utf-8"), re.S
    )


def test_pretraining_data_example_runs_as_a_script(fixtures_dir, tmp_path):
    """num_workers=2 spawns workers that re-import the script: without its __main__ guard
    each worker would rerun the build and the run would fail with BrokenProcessPool."""
    for name in ("corpus.txt", "spm.model"):
        shutil.copy(fixtures_dir / name, tmp_path / name)
    example = _python_blocks("pretraining_data.md")[0]
    assert "num_workers=2" in example
    (tmp_path / "example.py").write_text(example, encoding="utf-8")
    r = python_processes.run(
        [sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-3000:]
    instances, masked, swapped = r.stdout.split()
    assert int(instances) > 0 and 0.1 < float(masked) < 0.2 and 0.3 < float(swapped) < 0.7
    assert (tmp_path / "out.tfrecord").stat().st_size > 0
