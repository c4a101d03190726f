"""Shared pieces of the deployment tests: the tiny model's config and tokenizers, random
features shaped as a LiteRT file's inputs, and running the Task Library in its venv."""

import json
import pathlib
import subprocess

import numpy as np
from repo_paths import FIXTURES

from albert_tf import AlbertConfig

RUNNER = pathlib.Path(__file__).resolve().parent / "tasklib_runner.py"
CONFIG = AlbertConfig.from_json_file(FIXTURES / "albert_tiny" / "albert_config.json")
SPM = FIXTURES / "spm.model"
WORDPIECE_VOCAB = FIXTURES / "albert_zh" / "vocab.txt"
# ops that would mean variables survived the conversion (the Task Library never initialises)
RESOURCE_OPS = ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE")


def random_features(shapes: dict, seed=0) -> dict:
    """int32 features for a file's {input: shape}: random ids, the last positions padding,
    the second half segment 1, p_mask on the first positions."""
    rng = np.random.default_rng(seed)
    length = shapes["input_ids"][-1]
    feats = {name: np.zeros(shape, np.int32) for name, shape in shapes.items()}
    feats["input_ids"] = rng.integers(5, CONFIG.vocab_size, shapes["input_ids"]).astype(np.int32)
    feats["input_ids"][..., length - 3 :] = 0
    feats["input_mask"][..., : length - 3] = 1
    feats["segment_ids"][..., length // 2 : length - 3] = 1
    if "p_mask" in feats:
        feats["p_mask"][..., :3] = 1
    return feats


def run_tasklib(python, client, model_path, inputs, tmp_path):
    """(return code, JSON output) of tasklib_runner.py on a model in the Task Library venv."""
    path = tmp_path / f"inputs-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(inputs), encoding="utf-8")
    r = subprocess.run(
        [python, str(RUNNER), client, str(model_path), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        return r.returncode, json.loads(r.stdout)
    except json.JSONDecodeError:
        return r.returncode, {"error": r.stderr[-2000:]}
