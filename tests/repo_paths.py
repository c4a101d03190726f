"""Where the tests' own data lives (tests/data): importable by test modules in any subfolder."""

import pathlib

TEST_DATA = pathlib.Path(__file__).resolve().parent / "data"
FIXTURES = TEST_DATA / "fixtures"
DATA = TEST_DATA / "samples"
