"""Benchmark of Google's optimizers on TensorFlow: the update alone (`apply` on fixed
gradients, in a `tf.function`, as Keras' train step runs it) and the whole fine-tuning or
pretraining step (`model.fit`), for albert_tf's `AdamWeightDecay` and `LAMB` against the same
module at another commit (`--against`, e.g. the TensorFlow-only version before the `keras.ops`
rewrite), runs alternating (this code, the other, this code, ...), medians over `--rounds`.

The other commit's `albert_tf/engine/optimizers.py` is read with `git show` and imported on
its own beside this tree's (its Keras registrations renamed so that both load); the rest of
the package is this tree's for both.

    python bench/bench_optimizer.py --quick                     # against ba16868~1 (TF-only)
    python bench/bench_optimizer.py --shape base --against HEAD~5 --jit

Ends with one JSON line per optimizer.
"""

import argparse
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf import AlbertConfig  # noqa: E402
from albert_tf.engine import optimizers  # noqa: E402

QUICK = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
MODULE = "albert_tf/engine/optimizers.py"


def module_at(commit: str, folder: str):
    """`albert_tf.engine.optimizers` as it was at `commit`, imported under another name."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:{MODULE}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = os.path.join(folder, "optimizers_other.py")
    with open(path, "w") as f:
        f.write(source.replace('package="albert_tf"', 'package="albert_tf_bench_other"'))
    spec = importlib.util.spec_from_file_location("optimizers_other", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def model_and_batch(kind: str, config, batch: int, seq: int):
    """(model, features) of a fine-tuning classifier or a pretrainer, random ids."""
    from albert_tf.modeling.albert_model import AlbertPretrainer
    from albert_tf.modeling.finetuning_models import AlbertClassifier

    rng = np.random.default_rng(0)
    f = {
        "input_ids": rng.integers(5, config.vocab_size, (batch, seq)).astype("int32"),
        "input_mask": np.ones((batch, seq), "int32"),
        "segment_ids": np.zeros((batch, seq), "int32"),
    }
    keras.utils.set_random_seed(0)
    if kind == "adamw":
        f["label_ids"] = rng.integers(0, 2, (batch,)).astype("int32")
        return AlbertClassifier(config, 2), f
    p = 20
    f["masked_lm_positions"] = np.sort(rng.integers(1, seq, (batch, p)), -1).astype("int32")
    f["masked_lm_ids"] = rng.integers(5, config.vocab_size, (batch, p)).astype("int32")
    f["masked_lm_weights"] = np.ones((batch, p), "float32")
    f["next_sentence_labels"] = rng.integers(0, 2, (batch, 1)).astype("int32")
    return AlbertPretrainer(config), f


def runs_of(module, kind, config, batch, seq, steps, jit):
    """{'apply': fn, 'step': fn} of one optimizer module: its update alone and `steps` fit steps."""
    model, f = model_and_batch(kind, config, batch, seq)
    optimizer = module.create_optimizer(1e-5, 10_000, 100, optimizer=kind)
    model.compile(optimizer=optimizer, jit_compile=jit)
    ds = tf.data.Dataset.from_tensors(f).repeat()
    fit = lambda: model.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0)  # noqa: E731
    variables = model.trainable_variables
    grads = [tf.fill(v.shape, 1e-3) for v in variables]
    apply = tf.function(lambda: optimizer.apply(grads, variables), jit_compile=jit)
    return {"apply": lambda: (apply(), optimizer.iterations.numpy()), "step": fit}


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="hidden 256, 4 layers")
    p.add_argument("--shape", default="base", help="albert_<shape>_v2 (ignored with --quick)")
    p.add_argument("--against", default="ba16868~1", help="the commit to compare with")
    p.add_argument("--optimizers", default="adamw,lamb")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=4, help="fit steps per timing")
    p.add_argument("--applies", type=int, default=10, help="updates per timing")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--jit", action="store_true", help="XLA (jit_compile) for both")
    a = p.parse_args()
    config = AlbertConfig.from_preset(f"albert_{a.shape}_v2", **(QUICK if a.quick else {}))
    with tempfile.TemporaryDirectory() as folder:
        modules = {"this": optimizers, "other": module_at(a.against, folder)}
        for kind in a.optimizers.split(","):
            runs = {
                name: runs_of(m, kind, config, a.batch, a.seq, a.steps, a.jit)
                for name, m in modules.items()
            }
            for r in runs.values():  # warm-up: traces and compiles
                r["apply"](), r["step"]()
            times = {(name, part): [] for name in runs for part in ("apply", "step")}
            for _ in range(a.rounds):
                for name, r in runs.items():
                    times[name, "apply"].append(
                        timed(lambda r=r: [r["apply"]() for _ in range(a.applies)]) / a.applies
                    )
                    times[name, "step"].append(timed(r["step"]) / a.steps)
            med = {k: float(np.median(v)) for k, v in times.items()}
            line = {
                "optimizer": kind,
                "shape": "quick(H256,L4,I1024)" if a.quick else a.shape,
                "seq": a.seq,
                "jit": a.jit,
                "against": a.against,
                "apply_ms_this": 1e3 * med["this", "apply"],
                "apply_ms_other": 1e3 * med["other", "apply"],
                "apply_ratio_this_over_other": med["this", "apply"] / med["other", "apply"],
                "step_ms_this": 1e3 * med["this", "step"],
                "step_ms_other": 1e3 * med["other", "step"],
                "step_ratio_this_over_other": med["this", "step"] / med["other", "step"],
                "load": os.getloadavg()[0],
            }
            print(
                json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in line.items()})
            )


if __name__ == "__main__":
    main()
