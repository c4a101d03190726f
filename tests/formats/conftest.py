"""The fixture's TF1 model and reference outputs, loaded once for the format tests."""

import numpy as np
import pytest

from albert_tf import AlbertConfig, AlbertPretrainer, load_original_checkpoint


@pytest.fixture(scope="session")
def tiny_pretrainer(fixtures_dir):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    model = AlbertPretrainer(config)
    load_original_checkpoint(model, fixtures_dir / "albert_tiny" / "model.ckpt-best")
    return model


@pytest.fixture(scope="session")
def reference(fixtures_dir):
    return dict(np.load(fixtures_dir / "albert_tiny_reference.npz"))
