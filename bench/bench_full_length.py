"""Benchmark at equal work: albert_tf against keras-hub's ALBERT at one fixed sequence length (no
bucketing), for inference and a training step, in float32 and mixed bfloat16, beside this
machine's measured GEMM rates, so that both the ratio to keras-hub and the fraction of the
GEMM limit are printed.

Both models are the same shape with random weights and get the same treatment: one Keras model
each (albert_tf's AlbertClassifier, keras-hub's AlbertTextClassifier without preprocessor), called
inside a `tf.function` (inference: `model(x, training=False)`; training: forward, loss, gradients
and an SGD update) on one fixed batch of random ids, runs alternating (ours, keras-hub, ours,
...) so that drift on a shared machine hits both alike; each figure is the median of `--rounds`
timings of `--calls` calls after a warm-up that traces. The utilisation is the FLOPs of the work
(inference ≈ forward matmul FLOPs, training ≈ 3 × forward) per second over the `tf.matmul` rate
of the same dtype measured in the same process.

    python bench/bench_full_length.py                  # ALBERT-base, seq 128, batch 8
    python bench/bench_full_length.py --quick          # hidden 256, 4 layers: ~2 min on 2 cores
    python bench/bench_full_length.py --dtypes float32 --modes predict
    python bench/bench_full_length.py --op_profile 12   # + where albert_tf's step spends its time

Ends with one JSON line per (dtype, mode).
"""

import argparse
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf import AlbertConfig  # noqa: E402

QUICK = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
POLICIES = {"float32": "float32", "bfloat16": "mixed_bfloat16"}


def gemm_gflops(dtype: str, n=2048, repeats=10) -> float:
    """tf.matmul rate of n×n matrices in `dtype` (best of `repeats`)."""
    a = tf.cast(tf.random.normal([n, n]), dtype)
    b = tf.cast(tf.random.normal([n, n]), dtype)
    mm = tf.function(lambda: tf.reduce_sum(tf.cast(tf.matmul(a, b)[0, :1], tf.float32)))
    mm()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        mm().numpy()
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def forward_flops(c: AlbertConfig, batch: int, seq: int) -> float:
    """Matmul FLOPs of one forward pass of the encoder: per layer per token 2·(4H² + 2HI) and
    4·T·H in attention, plus the E→H projection."""
    h, i, layers = c.hidden_size, c.intermediate_size, c.num_hidden_layers
    per_token = layers * (2 * (4 * h * h + 2 * h * i) + 4 * seq * h) + 2 * c.embedding_size * h
    return float(batch * seq * per_token)


def inputs(c: AlbertConfig, batch: int, seq: int):
    rng = np.random.default_rng(0)
    ids = tf.constant(rng.integers(5, c.vocab_size, (batch, seq)), tf.int32)
    ones, zeros = tf.ones((batch, seq), tf.int32), tf.zeros((batch, seq), tf.int32)
    labels = tf.constant(rng.integers(0, 2, (batch,)), tf.int32)
    ours = {"input_ids": ids, "input_mask": ones, "segment_ids": zeros}
    hub = {"token_ids": ids, "segment_ids": zeros, "padding_mask": ones > 0}
    return ours, hub, labels


def models(c: AlbertConfig):
    import keras_hub

    from albert_tf.modeling.finetuning_models import AlbertClassifier

    ours = AlbertClassifier(c, 2, dropout_prob=0.0)
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=c.vocab_size,
        num_layers=c.num_hidden_layers,
        num_heads=c.num_attention_heads,
        embedding_dim=c.embedding_size,
        hidden_dim=c.hidden_size,
        intermediate_dim=c.intermediate_size,
        dropout=0.0,
        max_sequence_length=c.max_position_embeddings,
    )
    hub = keras_hub.models.AlbertTextClassifier(backbone, 2, preprocessor=None, dropout=0.0)
    return ours, hub


def logits_of(out):
    return out["logits"] if isinstance(out, dict) else out


def step_functions(model, x, labels, mode: str, jit: bool = False):
    """A traced callable that runs one predict call or one SGD training step of `model`."""
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if mode == "predict":
        return tf.function(
            lambda: tf.reduce_sum(tf.cast(logits_of(model(x, training=False)), tf.float32)),
            jit_compile=jit,
        )
    weights = model.trainable_variables

    @tf.function(jit_compile=jit)
    def train():
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, tf.cast(logits_of(model(x, training=True)), tf.float32))
        grads = tape.gradient(loss, weights)
        for w, g in zip(weights, grads):
            w.assign_sub(1e-6 * tf.cast(tf.convert_to_tensor(g), w.dtype))
        return loss

    return train


def op_profile(fn, top: int) -> list:
    """[(op type, ms, count)] of one call of `fn` from a TensorFlow profiler trace: thread time
    summed per op type (ops run in parallel, so the sum can exceed the call's wall time)."""
    import collections
    import glob
    import tempfile

    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        fn()
        tf.profiler.experimental.stop()
        space = xplane_pb2.XSpace()
        with open(glob.glob(f"{logdir}/plugins/profile/*/*.xplane.pb")[0], "rb") as f:
            space.ParseFromString(f.read())
    total, count = collections.Counter(), collections.Counter()
    for plane in space.planes:
        names = {k: v.name for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = names.get(event.metadata_id, "")
                op = name.rsplit(":", 1)[1] if ":" in name else ""  # "<node>:<op type>"
                if op and op not in ("Process", "Run") and "__inference" not in op:
                    total[op] += event.duration_ps / 1e9
                    count[op] += 1
    return [(op, round(ms, 1), count[op]) for op, ms in total.most_common(top)]


def bench(c, dtype, mode, batch, seq, calls, rounds, jit=False, profile_top=0):
    keras.mixed_precision.set_global_policy(POLICIES[dtype])
    try:
        ours, hub = models(c)
        x_ours, x_hub, labels = inputs(c, batch, seq)
        runs = {
            "ours": step_functions(ours, x_ours, labels, mode, jit),
            "hub": step_functions(hub, x_hub, labels, mode, jit),
        }
        for fn in runs.values():
            fn()
        times = {k: [] for k in runs}
        for _ in range(rounds):
            for k, fn in runs.items():
                t0 = time.perf_counter()
                for _ in range(calls):
                    out = fn()
                out.numpy()
                times[k].append((time.perf_counter() - t0) / calls)
        if profile_top:
            print(
                f"albert_tf {dtype} {mode}: ms per op type in one call:",
                op_profile(runs["ours"], profile_top),
                flush=True,
            )
    finally:
        keras.mixed_precision.set_global_policy("float32")
    med = {k: float(np.median(v)) for k, v in times.items()}
    return {k: batch / v for k, v in med.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="hidden 256, 4 layers, 3 rounds")
    p.add_argument("--shape", default="base", help="albert_<shape>_v2 (ignored with --quick)")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--calls", type=int, default=None, help="calls per timing")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--modes", default="predict,train")
    p.add_argument("--jit", action="store_true", help="both models' calls compiled with XLA")
    p.add_argument(
        "--op_profile",
        type=int,
        default=0,
        metavar="N",
        help="also print the N op types albert_tf's call spends most time in",
    )
    a = p.parse_args()
    c = AlbertConfig.from_preset(f"albert_{a.shape}_v2", **(QUICK if a.quick else {}))
    calls, rounds = a.calls or (3 if a.quick else 2), a.rounds or (3 if a.quick else 5)
    shape = "quick(H256,L4,I1024)" if a.quick else a.shape
    lines = []
    for dtype in a.dtypes.split(","):
        gflops = gemm_gflops(dtype)
        for mode in a.modes.split(","):
            r = bench(c, dtype, mode, a.batch, a.seq, calls, rounds, a.jit, a.op_profile)
            work = forward_flops(c, 1, a.seq) * (3 if mode == "train" else 1)
            lines.append(
                {
                    "shape": shape,
                    "seq": a.seq,
                    "batch": a.batch,
                    "dtype": dtype,
                    "mode": mode,
                    "jit": a.jit,
                    "albert_tf_ex_s": r["ours"],
                    "keras_hub_ex_s": r["hub"],
                    "ratio": r["ours"] / r["hub"],
                    "gemm_gflops": gflops,
                    "albert_tf_utilisation": r["ours"] * work / (gflops * 1e9),
                    "keras_hub_utilisation": r["hub"] * work / (gflops * 1e9),
                }
            )
            print(
                json.dumps(
                    {k: round(v, 4) if isinstance(v, float) else v for k, v in lines[-1].items()}
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
