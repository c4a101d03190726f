"""Training speed side by side on Keras' backends: steps/s of albert_tf's fine-tuning step
(`AlbertClassifier`, Google's AdamW from `create_optimizer`) and pretraining step
(`AlbertPretrainer`, MLM + SOP, Google's LAMB) on TensorFlow, TensorFlow + XLA
(`jit_compile=True`) and JAX, at sequence 128 and 512.

Keras fixes its backend once per process, so each backend runs in its own child process; the
children stay alive and the parent runs them in turns (TensorFlow, TensorFlow + XLA, JAX,
TensorFlow, ...), one timed round of every (mode, seq) at a time, so that drift on a shared
machine hits every backend alike. Each figure is the median over `--rounds` of steps/s of
`model.fit` over `--steps` steps (Keras' own training loop, as the drivers run it; batches of
random ids at full length from a `tf.data` pipeline that repeats one batch held in memory, so
the host input pipeline costs next to nothing). Beside it, per backend: the first `fit` call's
seconds (tracing and compiling, never in the steps/s), the optimizer's update alone (its
`apply` on fixed gradients, compiled as the train step is: a `tf.function` on TensorFlow,
`jax.jit` of `stateless_apply` on JAX) and the float32 GEMM rate that backend reaches
(2048² matmuls: TensorFlow's eager kernel, XLA's under `jit_compile`, `jax.jit`'s).

    python bench/bench_backends.py --quick      # hidden 256, 4 layers: a few minutes on 2 cores
    python bench/bench_backends.py --shape base --steps 5 --rounds 3
    python bench/bench_backends.py --quick --backends tensorflow_xla,jax --modes pretrain

Ends with one JSON line per (mode, seq): steps/s of each backend and the ratios to TF + XLA.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICK = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
BACKENDS = {  # name: (KERAS_BACKEND, jit_compile)
    "tensorflow": ("tensorflow", False),
    "tensorflow_xla": ("tensorflow", True),
    "jax": ("jax", True),
}
PREDICTIONS = {128: 20, 512: 76}  # Google's max_predictions_per_seq at these lengths


# -- the child: one backend, every (mode, seq) -------------------------------------------------


def features(mode, config, batch, seq):
    """One batch of random ids at full length: the classifier's or the pretrainer's features."""
    import numpy as np

    rng = np.random.default_rng(0)
    f = {
        "input_ids": rng.integers(5, config.vocab_size, (batch, seq)).astype("int32"),
        "input_mask": np.ones((batch, seq), "int32"),
        "segment_ids": (np.arange(seq) >= seq // 2).astype("int32")[None].repeat(batch, 0),
    }
    if mode == "finetune":
        f["label_ids"] = rng.integers(0, 2, (batch,)).astype("int32")
        return f
    p = PREDICTIONS.get(seq, max(1, round(seq * 0.15)))
    f["masked_lm_positions"] = np.sort(rng.choice(np.arange(1, seq), (batch, p)), -1).astype(
        "int32"
    )
    f["masked_lm_ids"] = rng.integers(5, config.vocab_size, (batch, p)).astype("int32")
    f["masked_lm_weights"] = np.ones((batch, p), "float32")
    f["next_sentence_labels"] = rng.integers(0, 2, (batch, 1)).astype("int32")
    return f


def build(mode, config, jit):
    """The compiled model of `mode` with Google's optimizer of that mode."""
    import keras

    from albert_tf.engine.optimizers import create_optimizer
    from albert_tf.modeling.albert_model import AlbertPretrainer
    from albert_tf.modeling.finetuning_models import AlbertClassifier

    keras.utils.set_random_seed(0)
    if mode == "finetune":
        model = AlbertClassifier(config, 2)
        optimizer = create_optimizer(1e-5, 10_000, 100, optimizer="adamw")
    else:
        model = AlbertPretrainer(config)
        optimizer = create_optimizer(1e-4, 10_000, 100, optimizer="lamb")
    model.compile(optimizer=optimizer, jit_compile=jit)
    return model


def optimizer_apply(model):
    """A callable running the model's optimizer update once on fixed gradients, compiled as
    Keras' train step compiles it."""
    import keras
    import numpy as np

    variables = model.trainable_variables
    optimizer = model.optimizer
    grads = [keras.ops.convert_to_tensor(np.full(v.shape, 1e-3, "float32")) for v in variables]
    if keras.backend.backend() == "jax":
        import jax

        step = jax.jit(optimizer.stateless_apply)

        def run():  # the variables' current arrays: fit donates the ones it was given
            state = [v.value for v in optimizer.variables], [v.value for v in variables]
            jax.block_until_ready(step(state[0], grads, state[1]))

        return run
    import tensorflow as tf

    step = tf.function(
        lambda: optimizer.apply(grads, variables), jit_compile=bool(model.jit_compile)
    )
    return lambda: (step(), optimizer.iterations.numpy())


def gemm_gflops(jit, n=2048, repeats=5):
    """float32 n×n matmul rate of this backend's kernel (best of `repeats`)."""
    import keras
    import numpy as np

    a = np.random.default_rng(0).standard_normal((n, n), dtype="float32")
    if keras.backend.backend() == "jax":
        import jax

        x = jax.numpy.asarray(a)
        mm = jax.jit(lambda p, q: p @ q)
        run = lambda: jax.block_until_ready(mm(x, x))  # noqa: E731
    else:
        import tensorflow as tf

        x = tf.constant(a)
        mm = tf.function(lambda: tf.matmul(x, x)[0, 0], jit_compile=jit)
        run = lambda: mm().numpy()  # noqa: E731
    run()
    best = min(timed(run) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def child(a):
    """Builds and warms every (mode, seq), then answers each line on stdin with one timed round
    (one JSON line on stdout) until stdin closes."""
    import tensorflow as tf

    from albert_tf import AlbertConfig

    jit = BACKENDS[a.child][1]
    config = AlbertConfig.from_preset(f"albert_{a.shape}_v2", **(QUICK if a.quick else {}))
    runs, first = {}, {}
    for mode in a.modes.split(","):
        for seq in map(int, a.seqs.split(",")):
            model = build(mode, config, jit)
            ds = tf.data.Dataset.from_tensors(features(mode, config, a.batch, seq)).repeat()
            fit = lambda m=model, d=ds: m.fit(d, steps_per_epoch=a.steps, epochs=1, verbose=0)  # noqa: E731
            first[f"{mode}_{seq}"] = timed(fit)
            print(
                f"{a.child} {mode} {seq}: first call {first[f'{mode}_{seq}']:.1f} s",
                file=sys.stderr,
            )
            runs[f"{mode}_{seq}"] = fit
            apply = optimizer_apply(model)
            apply()
            runs[f"{mode}_{seq}_optimizer"] = apply
    runs["gemm"] = lambda: gemm_gflops(jit)
    print(json.dumps({"first_call_s": first}), flush=True)
    for _ in sys.stdin:
        out = {}
        for key, fn in runs.items():
            out[key] = fn() if key == "gemm" else timed(fn)
        print(json.dumps(out), flush=True)


# -- the parent: children in turns -------------------------------------------------------------


def start(name, a):
    env = dict(os.environ, KERAS_BACKEND=BACKENDS[name][0], TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    args = [sys.executable, __file__, "--child", name, "--shape", a.shape, "--modes", a.modes]
    args += ["--seqs", a.seqs, "--batch", str(a.batch), "--steps", str(a.steps)]
    args += ["--quick"] if a.quick else []
    proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return proc


def answer(name, proc):
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"error: the {name} child process ended (exit {proc.wait()})")
    return json.loads(line)


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="hidden 256, 4 layers")
    p.add_argument("--shape", default="base", help="albert_<shape>_v2 (ignored with --quick)")
    p.add_argument("--backends", default="tensorflow,tensorflow_xla,jax")
    p.add_argument("--modes", default="finetune,pretrain")
    p.add_argument("--seqs", default="128,512")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=None, help="steps per timing (quick 4, else 5)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--child", choices=sorted(BACKENDS), help=argparse.SUPPRESS)
    a = p.parse_args()
    a.steps = a.steps or (4 if a.quick else 5)
    if a.child:
        return child(a)
    names = a.backends.split(",")
    unknown = sorted(set(names) - set(BACKENDS))
    if unknown:
        raise SystemExit(f"error: --backends: unknown {unknown}; choose from {sorted(BACKENDS)}")
    procs = {}
    first = {}
    for name in names:  # one at a time: the warm-ups do not compete
        procs[name] = start(name, a)
        first[name] = answer(name, procs[name])["first_call_s"]
    times = {name: [] for name in names}
    for _ in range(a.rounds):
        for name, proc in procs.items():
            proc.stdin.write("go\n")
            proc.stdin.flush()
            times[name].append(answer(name, proc))
    for proc in procs.values():
        proc.stdin.close()
        proc.wait()
    report(a, names, first, times)


def report(a, names, first, times):
    """One JSON line per (mode, seq): each backend's steps/s, first-call and optimizer times."""
    shape = "quick(H256,L4,I1024)" if a.quick else a.shape
    load = os.getloadavg()[0]
    for mode in a.modes.split(","):
        for seq in map(int, a.seqs.split(",")):
            key = f"{mode}_{seq}"
            line = {"shape": shape, "mode": mode, "seq": seq, "batch": a.batch, "load": load}
            for name in names:
                step_s = median([r[key] for r in times[name]]) / a.steps
                line[f"{name}_steps_s"] = 1 / step_s
                line[f"{name}_first_call_s"] = first[name][key]
                line[f"{name}_optimizer_ms"] = 1e3 * median(
                    [r[f"{key}_optimizer"] for r in times[name]]
                )
                line[f"{name}_gemm_gflops"] = median([r["gemm"] for r in times[name]])
            if "tensorflow_xla" in names:
                base = line["tensorflow_xla_steps_s"]
                for name in names:
                    line[f"{name}_vs_tensorflow_xla"] = line[f"{name}_steps_s"] / base
            print(
                json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in line.items()})
            )


if __name__ == "__main__":
    main()
