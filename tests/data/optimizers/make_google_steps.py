"""Writes google_steps.npz: Google's own AdamWeightDecayOptimizer and LAMBOptimizer, update by
update, on six small variables (the reference of tests/engine/test_optimization.py).

Run outside the repository's tests, with Google's ALBERT code unpacked and the TF1 shim of the
project's shared tools:

    pip download --no-deps albert-tensorflow==1.1
    python -m zipfile -e albert_tensorflow-1.1-py3-none-any.whl orig/
    ALBERT_ORIG_ROOT=orig PYTHONPATH=<shared>/tools python make_google_steps.py

Each case feeds, per update, the gradients (clipped with `tf.clip_by_global_norm(grads, 1.0)`
as Google's `create_optimizer` does) and the learning rate of Google's schedule (warmup +
linear decay; the schedule itself is tested separately), and records the weights and the
`adam_m` / `adam_v` slots after every update. The variables are named as the Keras paths the
project's optimizers match, so the same exclusion regexes apply.
"""

import numpy as np
import tensorflow.compat.v1 as tf
import tf1_shim  # sets TF1 behaviour (graphs, sessions) and imports Google's modules

optimization, lamb_optimizer = tf1_shim.import_original(["optimization", "lamb_optimizer"])

NAMES = [
    "dense/kernel",
    "dense/bias",
    "layer_norm/gamma",
    "layer_norm/beta",
    "head/output_weights",
    "head/output_bias",
]
SHAPES = [(4, 3), (3,), (3,), (3,), (2, 3), (2,)]


def schedule(step, init_lr, total, warmup):
    """Google's create_optimizer schedule (poly power 1, end 0, warmup from step 0)."""
    lr = init_lr * (1.0 - min(step, total) / total)
    return init_lr * step / warmup if step < warmup else lr


def micro_gradients(rng, scales, per_update):
    """per_update micro-batch gradients for each update scale."""
    return np.stack(
        [
            np.concatenate([(s * rng.normal(size=sh)).ravel() for sh in SHAPES])
            for s in scales
            for _ in range(per_update)
        ]
    ).astype("float32")


CASES = {
    # Google's defaults (create_optimizer's arguments), 5 updates of single batches
    "adamw_google": dict(kind="adamw", wd=0.01, decay_ex=["LayerNorm", "layer_norm", "bias"],
                         adapt_ex=None, scales=[5.0, 0.05, 2.0, 0.5, 3.0], per_update=1,
                         lr=(0.05, 8, 2)),
    "lamb_google": dict(kind="lamb", wd=0.01, decay_ex=["LayerNorm", "layer_norm", "bias"],
                        adapt_ex=None, scales=[5.0, 0.05, 2.0, 0.5, 3.0], per_update=1,
                        lr=(0.05, 8, 2)),
    # own lists (LAMB: a trust-ratio list unlike the decay list), 3 micro-batches per update
    "adamw_own": dict(kind="adamw", wd=0.05, decay_ex=["bias", "gamma"], adapt_ex=None,
                      scales=[4.0, 0.02, 3.0, 0.05], per_update=3, lr=(0.05, 5, 2)),
    "lamb_own": dict(kind="lamb", wd=0.05, decay_ex=["bias", "gamma"],
                     adapt_ex=["layer_norm", "output_weights"], scales=[4.0, 0.02, 3.0, 0.05],
                     per_update=3, lr=(0.05, 5, 2)),
}


def run_case(seed, kind, wd, decay_ex, adapt_ex, scales, per_update, lr):
    rng = np.random.default_rng(seed)
    init = [rng.normal(size=sh).astype("float32") for sh in SHAPES]
    micro = micro_gradients(rng, scales, per_update)
    sizes = [int(np.prod(sh)) for sh in SHAPES]
    graph = tf.Graph()
    with graph.as_default():
        params = [tf.get_variable(n, initializer=x) for n, x in zip(NAMES, init)]
        flat = tf.placeholder(tf.float32, [sum(sizes)])
        rate = tf.placeholder(tf.float32, [])
        grads = [tf.reshape(g, sh) for g, sh in zip(tf.split(flat, sizes), SHAPES)]
        grads, _ = tf.clip_by_global_norm(grads, clip_norm=1.0)
        args = dict(learning_rate=rate, weight_decay_rate=wd, beta_1=0.9, beta_2=0.999,
                    epsilon=1e-6, exclude_from_weight_decay=decay_ex)
        if kind == "lamb":
            opt = lamb_optimizer.LAMBOptimizer(exclude_from_layer_adaptation=adapt_ex, **args)
        else:
            opt = optimization.AdamWeightDecayOptimizer(**args)
        train = opt.apply_gradients(list(zip(grads, params)))
        slots = {n: [graph.get_tensor_by_name(f"{n}/adam_{s}:0") for s in "mv"] for n in NAMES}
        weights, ms, vs, rates = [], [], [], []
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            for update in range(len(scales)):
                mean = micro[update * per_update : (update + 1) * per_update].mean(axis=0)
                rates.append(schedule(update, *lr))
                sess.run(train, {flat: mean, rate: rates[-1]})
                values = sess.run([params, [slots[n] for n in NAMES]])
                weights.append(np.concatenate([w.ravel() for w in values[0]]))
                ms.append(np.concatenate([m.ravel() for m, _ in values[1]]))
                vs.append(np.concatenate([v.ravel() for _, v in values[1]]))
    flat_init = np.concatenate([x.ravel() for x in init])
    return dict(init=flat_init, micro=micro, lr=np.array(rates, "float32"),
                weights=np.stack(weights), m=np.stack(ms), v=np.stack(vs))


def main():
    arrays = {}
    for seed, (name, case) in enumerate(CASES.items()):
        for key, value in run_case(seed, **case).items():
            arrays[f"{name}/{key}"] = value
    np.savez_compressed("google_steps.npz", **arrays)
    print("wrote google_steps.npz:", sorted(arrays))


if __name__ == "__main__":
    main()
