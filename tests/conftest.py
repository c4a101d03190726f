"""Shared test fixtures: the test data in tests/data, and small helpers.

Tests read only what the repository carries (tests/data), so they pass on a fresh clone.
"""

import os

import pytest
from repo_paths import DATA, FIXTURES

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if os.environ["KERAS_BACKEND"] == "torch":
    import albert_tf  # noqa: F401  (loads Keras' torch backend before a test imports TensorFlow)


def pytest_collection_modifyitems(config, items):
    """On KERAS_BACKEND=torch only the tests marked `torch` run: albert_tf runs the models'
    forward pass and predict there, not training or exports (docs/backends.md)."""
    if os.environ["KERAS_BACKEND"] != "torch":
        return
    skip = pytest.mark.skip(reason="not marked `torch`: KERAS_BACKEND=torch runs forward passes")
    for item in items:
        if item.get_closest_marker("torch") is None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def fixtures_dir():
    """Reference fixtures written by Google's original code (spm model, albert_tiny, ...)."""
    return FIXTURES


@pytest.fixture(scope="session")
def data_dir():
    """Small samples of the real GLUE/SQuAD/RACE/Wikipedia data, in their release layouts."""
    return DATA


def _hypothesis_profiles():
    """Property tests draw the same examples on every run ("ci", the default), so a failure
    reproduces; HYPOTHESIS_PROFILE=explore draws fresh random ones to search further."""
    try:
        from hypothesis import settings
    except ImportError:  # hypothesis is a test extra; only test_properties.py needs it
        return
    settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
    settings.register_profile("explore", deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


_hypothesis_profiles()


@pytest.fixture
def ram_bucket(tmp_path, monkeypatch):
    """A fresh ram:// 'bucket', with the working folder an empty local folder that must stay
    empty: a run whose paths are all remote writes nothing under the working folder."""
    from ramfs import new_bucket

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield new_bucket()
    left = sorted(os.listdir(cwd))
    assert left == [], f"written under the working folder: {left}"


@pytest.fixture(scope="session")
def tiny_pretrainer(fixtures_dir):
    """The fixture's TF1 model, loaded once (the format and interop tests)."""
    from albert_tf import AlbertConfig, AlbertPretrainer, load_original_checkpoint

    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    model = AlbertPretrainer(config)
    load_original_checkpoint(model, fixtures_dir / "albert_tiny" / "model.ckpt-best")
    return model


@pytest.fixture(scope="session")
def reference(fixtures_dir):
    """The fixture model's recorded reference outputs."""
    import numpy as np

    return dict(np.load(fixtures_dir / "albert_tiny_reference.npz"))
