"""A .keras file of any albert_tf model loads in a fresh process after just `import albert_tf`."""

import subprocess
import sys

import pytest

from albert_tf import AlbertClassifier, AlbertConfig


@pytest.mark.backends  # the fresh process inherits KERAS_BACKEND
def test_load_model_in_a_fresh_process(fixtures_dir, tmp_path):
    config = AlbertConfig.from_json_file(str(fixtures_dir / "albert_tiny" / "albert_config.json"))
    path = tmp_path / "classifier.keras"
    AlbertClassifier(config, num_labels=3).save(str(path))
    script = (
        "import albert_tf, sys; m = albert_tf.load_model(sys.argv[1]); "
        "print(type(m).__name__, m.num_labels)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["AlbertClassifier", "3"]
