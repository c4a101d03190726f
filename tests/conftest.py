"""Shared test fixtures: where ../shared lives, and small helpers."""
import os
import pathlib

import pytest

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("ALBERT_TF_SHARED", ROOT.parent / "shared"))
FIXTURES = SHARED / "fixtures"
DATA = SHARED / "data"


@pytest.fixture(scope="session")
def fixtures_dir():
    if not FIXTURES.is_dir():
        pytest.fail(f"shared fixtures not found at {FIXTURES} (set ALBERT_TF_SHARED)")
    return FIXTURES


@pytest.fixture(scope="session")
def data_dir():
    if not DATA.is_dir():
        pytest.fail(f"shared data not found at {DATA} (set ALBERT_TF_SHARED)")
    return DATA
