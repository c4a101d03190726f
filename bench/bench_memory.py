"""Benchmark of --recompute_grad: peak memory and training-step time of ALBERT-large and -xlarge
shapes at seq 512, with and without recomputing each shared block in the backward pass.

Each (shape, recompute) setting runs in a fresh Python process so that its peak is its own: on
a GPU the allocator's peak (tf.config.experimental.get_memory_info), on CPU the process's VmHWM
(peak RSS) and its rise over the RSS before the first step (≈ activations + gradients). The step
is a classifier's forward, backward and an SGD update (random init, random ids), in a
tf.function without XLA; the time is the median of the timed steps after one warm-up step.

    python bench/bench_memory.py                  # 24 layers, batch 4 (a GPU, or a patient CPU)
    python bench/bench_memory.py --quick          # 4 layers, batch 1: a few minutes on 2 cores
    python bench/bench_memory.py --shapes large --layers 24 --batch 8 --steps 5

Prints a table and, last, one JSON line per setting.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import numpy as np
import tensorflow as tf
import keras
from albert_tf import AlbertConfig
from albert_tf.modeling.finetuning_models import AlbertClassifier

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    return 0

gpu = bool(tf.config.list_physical_devices("GPU"))
config = AlbertConfig.from_preset("albert_{shape}_v2", num_hidden_layers={layers},
                                  recompute_grad={recompute})
keras.utils.set_random_seed(0)
model = AlbertClassifier(config, 2, dropout_prob=0.0)
rng = np.random.default_rng(0)
feats = {{"input_ids": tf.constant(rng.integers(5, 30000, ({batch}, {seq})), tf.int32),
         "input_mask": tf.ones(({batch}, {seq}), tf.int32),
         "segment_ids": tf.zeros(({batch}, {seq}), tf.int32)}}
labels = tf.zeros(({batch},), tf.int32)
model(feats)
optimizer = keras.optimizers.SGD(1e-4)
optimizer.build(model.trainable_variables)

@tf.function
def step():
    with tf.GradientTape() as tape:
        logits = model(feats, training=True)["logits"]
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                  model.trainable_variables))
    return loss

before = rss("VmRSS")
if gpu:
    tf.config.experimental.reset_memory_stats("GPU:0")
step().numpy()  # warm-up (traces)
times = []
for _ in range({steps}):
    t0 = time.perf_counter()
    step().numpy()
    times.append(time.perf_counter() - t0)
out = {{"shape": "{shape}", "layers": {layers}, "seq": {seq}, "batch": {batch},
        "recompute_grad": {recompute}, "device": "gpu" if gpu else "cpu",
        "step_s": float(np.median(times)), "peak_rss_bytes": rss("VmHWM"),
        "rss_rise_bytes": rss("VmHWM") - before}}
if gpu:
    out["gpu_peak_bytes"] = tf.config.experimental.get_memory_info("GPU:0")["peak"]
print(json.dumps(out))
"""


def run_one(shape, recompute, layers, seq, batch, steps) -> dict:
    code = _CHILD.format(
        root=str(ROOT),
        shape=shape,
        recompute=recompute,
        layers=layers,
        seq=seq,
        batch=batch,
        steps=steps,
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise SystemExit(f"{shape} recompute={recompute} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="4 layers, batch 1, 2 timed steps")
    p.add_argument("--shapes", default="large,xlarge")
    p.add_argument("--layers", type=int, default=None, help="default 24 (4 with --quick)")
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=None, help="default 4 (1 with --quick)")
    p.add_argument(
        "--steps", type=int, default=None, help="timed steps (default 3, 2 with --quick)"
    )
    a = p.parse_args()
    layers = a.layers or (4 if a.quick else 24)
    batch = a.batch or (1 if a.quick else 4)
    steps = a.steps or (2 if a.quick else 3)
    rows = []
    for shape in a.shapes.split(","):
        for recompute in (False, True):  # alternating within a shape: drift hits both alike
            rows.append(run_one(shape, recompute, layers, a.seq, batch, steps))
    mem = "gpu_peak_bytes" if "gpu_peak_bytes" in rows[0] else "rss_rise_bytes"
    print(f"{'shape':8} {'recompute':>9} {'step s':>8} {mem + ' MiB':>22} {'peak RSS MiB':>13}")
    for r in rows:
        print(
            f"{r['shape']:8} {str(r['recompute_grad']):>9} {r['step_s']:8.2f} "
            f"{r[mem] / 2**20:22.0f} {r['peak_rss_bytes'] / 2**20:13.0f}"
        )
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
