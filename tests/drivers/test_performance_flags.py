"""The shared flags --bucket_by_length and --padding_free (on by default; --nobucket_by_length,
--nopadding_free) and --recompute_grad reach FineTuningOptions and the AlbertConfig (in a fresh
process: absl flags
are global)."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[2])
_SCRIPT = r"""
import json, sys
from absl import flags
from albert_tf.drivers import flags as shared, validation
shared.define_finetuning_flags()
FLAGS, out = flags.FLAGS, []
for extra in ([], ["--nobucket_by_length", "--nopadding_free", "--recompute_grad"]):
    FLAGS.unparse_flags()
    base = ["x", "--albert_config_file=" + sys.argv[1], "--output_dir=o", "--spm_model_file=s"]
    FLAGS(base + extra)
    opts = shared.options_from_flags(FLAGS)
    out.append({"bucket": opts.bucket_by_length, "padding_free": opts.padding_free,
                "recompute": validation.config_from_flags(FLAGS).recompute_grad})
print(json.dumps(out))
"""


def test_defaults_and_negations(fixtures_dir):
    config = fixtures_dir / "albert_tiny" / "albert_config.json"
    r = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(config)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [
        {"bucket": True, "padding_free": True, "recompute": False},
        {"bucket": False, "padding_free": False, "recompute": True},
    ]
