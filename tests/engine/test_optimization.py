"""Tests of albert_tf.engine.optimizers and learning_rate against a NumPy re-implementation of
Google's update rules.

Tests marked `backends` hold on every Keras backend: CI runs them again with KERAS_BACKEND=jax
(`KERAS_BACKEND=jax python -m pytest -m backends tests`); the others need TensorFlow
(tf.distribute, tf.train.Checkpoint, raw tf.Variables) and are skipped elsewhere."""

import copy
import json
import re
import subprocess
import sys
import textwrap
import weakref

import keras
import numpy as np
import pytest
from repo_paths import TEST_DATA
import tensorflow as tf

import albert_tf  # noqa: F401  (selects the TensorFlow backend unless KERAS_BACKEND is set)
from albert_tf.engine import optimizers as opt_lib
from albert_tf.engine.learning_rate import WarmupPolynomialDecay
from albert_tf.engine.optimizers import LAMB, AdamWeightDecay, create_optimizer

GOOGLE_PATTERNS = ["LayerNorm", "layer_norm", "bias"]
ON_TF = keras.backend.backend() == "tensorflow"
tf_only = pytest.mark.skipif(not ON_TF, reason="TensorFlow-only machinery")


# ---------------------------------------------------------------------------------------------
# NumPy reference, written from the formulas (float64)


def ref_schedule(step, init_lr, total, warmup, power=1.0, start=0):
    """Google's schedule: polynomial decay to 0, linear warmup while step - start < warmup."""
    lr = init_lr * (1.0 - min(step, total) / total) ** power
    if warmup and step - start < warmup:
        lr = init_lr * max(step - start, 0) / warmup  # Google's is negative before `start`
    return lr


def ref_google_steps(
    params,
    grad_seq,
    lrs,
    kind,
    decay,
    adapt,
    wd=0.01,
    clip=1.0,
    bias_correction=False,
    b1=0.9,
    b2=0.999,
    eps=1e-6,
    slots=False,
):
    """Apply Google's AdamW / LAMB update for each (grads, lr); returns float64 params (and,
    with `slots`, the moments m and v)."""
    p = [np.array(x, np.float64) for x in params]
    m = [np.zeros_like(x) for x in p]
    v = [np.zeros_like(x) for x in p]
    for t, (grads, lr) in enumerate(zip(grad_seq, lrs), start=1):
        g = [np.array(x, np.float64) for x in grads]
        if clip is not None:
            norm = np.sqrt(sum(np.sum(x * x) for x in g))
            g = [x * clip / max(norm, clip) for x in g]
        for i in range(len(p)):
            m[i] = b1 * m[i] + (1 - b1) * g[i]
            v[i] = b2 * v[i] + (1 - b2) * g[i] ** 2
            mh, vh = m[i], v[i]
            if bias_correction:
                mh, vh = mh / (1 - b1**t), vh / (1 - b2**t)
            u = mh / (np.sqrt(vh) + eps)
            if decay[i]:
                u = u + wd * p[i]
            r = 1.0
            if kind == "lamb" and adapt[i]:
                wn, un = np.linalg.norm(p[i]), np.linalg.norm(u)
                r = wn / un if wn > 0 and un > 0 else 1.0
            p[i] = p[i] - r * lr * u
    return (p, m, v) if slots else p


# ---------------------------------------------------------------------------------------------
# Fixtures


class Head(keras.layers.Layer):
    """Holds Google-style head weights: output_weights (decayed) and output_bias (excluded)."""

    def build(self, input_shape):
        self.output_weights = self.add_weight(name="output_weights", shape=(2, 3))
        self.output_bias = self.add_weight(name="output_bias", shape=(2,))


def make_variables(seed=0):
    """Six variables whose paths hit and miss Google's exclusions, with random values."""
    dense = keras.layers.Dense(3, name="dense")
    dense.build((None, 4))
    norm = keras.layers.LayerNormalization(name="layer_norm")
    norm.build((None, 3))
    head = Head(name="head")
    head.build((None, 3))
    variables = dense.trainable_weights + norm.trainable_weights + head.trainable_weights
    rng = np.random.default_rng(seed)
    for v in variables:
        v.assign(rng.normal(size=v.shape).astype("float32"))
    return variables


EXPECTED_PATHS = [
    "dense/kernel",
    "dense/bias",
    "layer_norm/gamma",
    "layer_norm/beta",
    "head/output_weights",
    "head/output_bias",
]
EXPECTED_DECAY = [True, False, False, False, True, False]
VARIABLE_SHAPES = [(4, 3), (3,), (3,), (3,), (2, 3), (2,)]


def random_grads(variables, steps, seed=1):
    """Per-step gradients at scales 5, 0.05, 2, 0.5...: some steps clipped, some not."""
    rng = np.random.default_rng(seed)
    scales = [5.0, 0.05, 2.0, 0.5, 3.0, 0.1]
    return [
        [(scales[s % len(scales)] * rng.normal(size=v.shape)).astype("float32") for v in variables]
        for s in range(steps)
    ]


_JAX_STEPS = weakref.WeakKeyDictionary()  # optimizer -> its jitted stateless_apply


def run_optimizer(optimizer, variables, grad_seq):
    """Apply each gradient list once in a compiled step, as in training: inside a tf.function
    on TensorFlow; on JAX, through a jitted `stateless_apply` (what Keras' JAX train step
    calls), the new values then written back to the variables."""
    if ON_TF:

        @tf.function
        def step(grads):
            optimizer.apply_gradients(zip(grads, variables))

        for grads in grad_seq:
            step([tf.constant(g) for g in grads])
        return [v.numpy() for v in variables]
    import jax  # deferred: only on the JAX backend

    if not optimizer.built:
        optimizer.build(variables)
    if optimizer not in _JAX_STEPS:
        _JAX_STEPS[optimizer] = jax.jit(optimizer.stateless_apply)  # compiled once
    step = _JAX_STEPS[optimizer]
    values = [v.value for v in variables]
    state = [v.value for v in optimizer.variables]
    for grads in grad_seq:
        values, state = step(state, [jax.numpy.asarray(g) for g in grads], values)
    for variable, value in zip(list(variables) + optimizer.variables, values + state):
        variable.assign(value)
    return [v.numpy() for v in variables]


def max_diff(a, b):
    """Largest absolute difference between two lists of arrays."""
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b))


# ---------------------------------------------------------------------------------------------
# Schedule


@pytest.mark.parametrize(
    "step,expected",
    [
        (0, 0.0),
        (5, 5e-4),
        (9, 9e-4),
        (10, 1e-3 * (1 - 10 / 100)),  # boundary: the decayed value, not init_lr (Google's)
        (50, 5e-4),
        (99, 1e-5),
        (100, 0.0),
        (150, 0.0),
    ],
)
@pytest.mark.backends
def test_schedule_key_steps(step, expected):
    s = WarmupPolynomialDecay(1e-3, num_train_steps=100, num_warmup_steps=10)
    assert float(s(step)) == pytest.approx(expected, rel=1e-5, abs=1e-12)
    assert expected == pytest.approx(ref_schedule(step, 1e-3, 100, 10), abs=1e-12)


@pytest.mark.backends
def test_schedule_start_warmup_power_and_no_warmup():
    s = WarmupPolynomialDecay(1e-3, 100, 10, poly_power=2.0, start_warmup_step=20)
    for step in [0, 19, 20, 25, 29, 30, 50, 100]:
        assert float(s(step)) == pytest.approx(
            ref_schedule(step, 1e-3, 100, 10, power=2.0, start=20), rel=1e-5, abs=1e-12
        )
    assert float(s(0)) == 0.0  # clamped where Google's formula would be negative
    assert float(s(30)) == pytest.approx(1e-3 * 0.7**2, rel=1e-5)
    assert float(WarmupPolynomialDecay(1e-3, 100)(0)) == pytest.approx(1e-3)


@pytest.mark.backends
def test_schedule_serialization():
    s = WarmupPolynomialDecay(2e-3, 50, 5, poly_power=0.5, start_warmup_step=3)
    s2 = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(s))
    assert isinstance(s2, WarmupPolynomialDecay) and s2.get_config() == s.get_config()
    for step in [0, 4, 8, 9, 30, 60]:
        assert float(s2(step)) == float(s(step))


# ---------------------------------------------------------------------------------------------
# Update rules against the NumPy reference


@pytest.mark.backends
def test_exclusions_follow_variable_paths():
    variables = make_variables()
    assert [v.path for v in variables] == EXPECTED_PATHS
    expected = [not any(re.search(p, path) for p in GOOGLE_PATTERNS) for path in EXPECTED_PATHS]
    assert expected == EXPECTED_DECAY
    opt = LAMB(1e-2)
    opt.build(variables)
    assert opt._use_decay == EXPECTED_DECAY and opt._use_adaptation == EXPECTED_DECAY
    assert AdamWeightDecay(1e-2)._adaptation_exclusions() == []


@pytest.mark.backends
@pytest.mark.parametrize("kind", ["adamw", "lamb"])
@pytest.mark.parametrize("bias_correction", [False, True])
def test_matches_numpy_reference(kind, bias_correction):
    variables = make_variables()
    start = [v.numpy() for v in variables]
    grads = random_grads(variables, 5)
    opt = create_optimizer(
        0.05, num_train_steps=8, num_warmup_steps=2, optimizer=kind, bias_correction=bias_correction
    )
    got = run_optimizer(opt, variables, grads)
    lrs = [ref_schedule(t, 0.05, 8, 2) for t in range(5)]
    want = ref_google_steps(
        start, grads, lrs, kind, EXPECTED_DECAY, EXPECTED_DECAY, bias_correction=bias_correction
    )
    np.testing.assert_allclose(
        np.concatenate([g.ravel() for g in got]),
        np.concatenate([w.ravel() for w in want]),
        rtol=2e-5,
        atol=1e-6,
    )
    assert int(opt.iterations) == 5
    assert max_diff(got, start) > 1e-3  # it really moved


@pytest.mark.backends
def test_bias_correction_first_step_closed_form():
    """Step 1 on an excluded variable: m/(sqrt(v)+eps) is g/|g| with correction, and
    0.1 g / (sqrt(0.001)|g| + eps) ~ 3.162 sign(g) without (Google's default)."""
    g = np.array([0.5, -2.0, 4.0], np.float32)
    out = {}
    for bc in (False, True):
        bias = keras.Variable(np.ones(3, np.float32), name="bias")
        opt = AdamWeightDecay(0.01, bias_correction=bc, clip_norm=None)
        opt.apply_gradients([(g, bias)])
        out[bc] = 1.0 - bias.numpy()
    np.testing.assert_allclose(out[True], 0.01 * g / (np.abs(g) + 1e-6), rtol=1e-5)
    np.testing.assert_allclose(
        out[False], 0.01 * 0.1 * g / (np.sqrt(1e-3) * np.abs(g) + 1e-6), rtol=1e-5
    )
    assert np.all(np.abs(out[False]) > 3 * np.abs(out[True]))


@pytest.mark.backends
def test_lamb_trust_ratio_is_one_for_zero_weight_and_zero_update():
    g = np.array([[0.5, -2.0], [1.0, 3.0]], np.float32)
    kernel = keras.Variable(np.zeros((2, 2), np.float32), name="kernel")
    opt = LAMB(0.01, clip_norm=None)
    opt.apply_gradients([(g, kernel)])
    u = 0.1 * g / (np.sqrt(1e-3) * np.abs(g) + 1e-6)  # wd * 0 adds nothing
    np.testing.assert_allclose(kernel.numpy(), -0.01 * u, rtol=1e-5)
    # zero gradient and no decay: ||u|| = 0, ratio 1, nothing moves and nothing is NaN
    w = keras.Variable(np.full((2, 2), 3.0, np.float32), name="kernel2")
    opt2 = LAMB(0.01, clip_norm=None, weight_decay_rate=0.0)
    opt2.apply_gradients([(np.zeros((2, 2), np.float32), w)])
    np.testing.assert_array_equal(w.numpy(), np.full((2, 2), 3.0, np.float32))


@pytest.mark.backends
def test_lamb_trust_ratio_scales_update_to_weight_norm():
    """With wd=0 and one step, ||delta w|| = lr * ||w|| for an adapted variable."""
    w0 = np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)  # ||w|| = 5
    w = keras.Variable(w0, name="kernel")
    opt = LAMB(0.1, weight_decay_rate=0.0, clip_norm=None)
    opt.apply_gradients([(np.array([[1.0, -1.0], [2.0, 0.5]], np.float32), w)])
    assert np.linalg.norm(w.numpy() - w0) == pytest.approx(0.1 * 5.0, rel=1e-5)


@pytest.mark.backends
def test_global_norm_clipping():
    variables = make_variables()
    start = [v.numpy() for v in variables]
    grads = random_grads(variables, 3)  # scales 5, 0.05, 2: global norms well above 1, then below
    assert np.sqrt(sum(np.sum(g * g) for g in grads[0])) > 5
    results = {}
    for clip in (1.0, None):
        for v, s in zip(variables, start):
            v.assign(s)
        opt = LAMB(0.01, clip_norm=clip)
        results[clip] = run_optimizer(opt, variables, grads)
        want = ref_google_steps(
            start, grads, [0.01] * 3, "lamb", EXPECTED_DECAY, EXPECTED_DECAY, clip=clip
        )
        assert max_diff(results[clip], want) < 1e-5
    assert max_diff(results[1.0], results[None]) > 1e-3


@pytest.mark.backends
def test_accumulation_apply_matches_reference_on_mean_gradient():
    """N=3 micro-steps of g_k equal one Google step on mean(g_k); iterations count updates."""
    variables = make_variables()
    start = [v.numpy() for v in variables]
    micro = random_grads(variables, 6, seed=7)
    opt = create_optimizer(0.05, 4, 1, optimizer="lamb", gradient_accumulation_steps=3)
    got = run_optimizer(opt, variables[:], micro[:2])
    assert int(opt.iterations) == 0 and max_diff(got, start) == 0.0  # nothing applied yet
    got = run_optimizer(opt, variables, micro[2:])
    assert int(opt.iterations) == 2
    means = [
        [np.mean([micro[k][i] for k in range(j, j + 3)], axis=0) for i in range(6)] for j in (0, 3)
    ]
    want = ref_google_steps(
        start,
        means,
        [ref_schedule(t, 0.05, 4, 1) for t in range(2)],
        "lamb",
        EXPECTED_DECAY,
        EXPECTED_DECAY,
    )
    assert max_diff(got, want) < 1e-5


def means_of(micro, n):
    """The mean of each run of n consecutive micro-batch gradients (one accumulated update)."""
    return [
        [np.mean([g[i] for g in micro[j : j + n]], axis=0) for i in range(len(micro[0]))]
        for j in range(0, len(micro), n)
    ]


@pytest.mark.backends
@pytest.mark.parametrize("kind", ["adamw", "lamb"])
def test_update_by_update_with_own_exclusions_accumulation_clipping_and_loss_scale(kind):
    """Google's rule, update after update, weights and both moments: exclusion lists that
    differ from Google's (and, for LAMB, a trust-ratio list that differs from the decay list),
    3 micro-batches per update, clipping that engages on some updates only, a loss scale the
    optimizer divides out, and the warmup schedule counted in updates."""
    variables = make_variables(seed=4)
    start = [v.numpy() for v in variables]
    scale = 128.0
    rng = np.random.default_rng(9)
    micro = [
        [(update_scale * rng.normal(size=v.shape)).astype("float32") for v in variables]
        for update_scale in (4.0, 0.02, 3.0, 0.05)
        for _ in range(3)
    ]
    extra = {"exclude_from_layer_adaptation": ["layer_norm", "output_weights"]}
    opt = (LAMB if kind == "lamb" else AdamWeightDecay)(
        WarmupPolynomialDecay(0.05, num_train_steps=5, num_warmup_steps=2),
        weight_decay_rate=0.05,
        exclude_from_weight_decay=["bias", "gamma"],
        gradient_accumulation_steps=3,
        loss_scale_factor=scale,
        **(extra if kind == "lamb" else {}),
    )
    decay = [not re.search("bias|gamma", p) for p in EXPECTED_PATHS]
    adapt = [not re.search("layer_norm|output_weights", p) for p in EXPECTED_PATHS]
    assert decay == [True, False, False, True, True, False] and adapt != decay
    means = means_of(micro, 3)
    norms = [np.sqrt(sum(np.sum(g * g) for g in mean)) for mean in means]
    assert min(norms) < 1.0 < max(norms)  # clipping engages on some updates only
    lrs = [ref_schedule(t, 0.05, 5, 2) for t in range(4)]
    for update in range(4):
        scaled = [[scale * g for g in grads] for grads in micro[3 * update : 3 * update + 3]]
        got = run_optimizer(opt, variables, scaled)
        assert int(opt.iterations) == update + 1
        want, m, v = ref_google_steps(
            start, means[: update + 1], lrs[: update + 1], kind, decay, adapt, wd=0.05, slots=True
        )
        assert max_diff(got, want) < 1e-5, update
        assert max_diff([x.numpy() for x in opt._momentums], m) < 1e-6
        assert max_diff([x.numpy() for x in opt._velocities], v) < 1e-6
    assert max_diff(got, start) > 1e-2


GOOGLE_STEPS = np.load(TEST_DATA / "optimizers" / "google_steps.npz")


def google_case(name):
    """One case of google_steps.npz, split back into per-variable arrays."""
    sizes = np.cumsum([int(np.prod(shape)) for shape in VARIABLE_SHAPES])[:-1]

    def split(flat):
        return [x.reshape(shape) for x, shape in zip(np.split(flat, sizes), VARIABLE_SHAPES)]

    case = {key: GOOGLE_STEPS[f"{name}/{key}"] for key in ("init", "micro", "lr")}
    for key in ("weights", "m", "v"):
        case[key] = [split(row) for row in GOOGLE_STEPS[f"{name}/{key}"]]
    case["init"], case["micro"] = split(case["init"]), [split(g) for g in case["micro"]]
    return case


GOOGLE_CASES = {
    # create_optimizer's defaults are Google's create_optimizer's
    "adamw_google": lambda: create_optimizer(0.05, 8, 2, optimizer="adamw"),
    "lamb_google": lambda: create_optimizer(0.05, 8, 2, optimizer="lamb"),
    # own exclusion lists, 3 micro-batches per update, the loss scaled by 128
    "adamw_own": lambda: AdamWeightDecay(
        WarmupPolynomialDecay(0.05, 5, 2),
        weight_decay_rate=0.05,
        exclude_from_weight_decay=["bias", "gamma"],
        gradient_accumulation_steps=3,
        loss_scale_factor=128.0,
    ),
    "lamb_own": lambda: LAMB(
        WarmupPolynomialDecay(0.05, 5, 2),
        weight_decay_rate=0.05,
        exclude_from_weight_decay=["bias", "gamma"],
        exclude_from_layer_adaptation=["layer_norm", "output_weights"],
        gradient_accumulation_steps=3,
        loss_scale_factor=128.0,
    ),
}


@pytest.mark.backends
@pytest.mark.parametrize("name", sorted(GOOGLE_CASES))
def test_equals_google_optimizers_update_by_update(name):
    """Google's own AdamWeightDecayOptimizer / LAMBOptimizer (tests/data/optimizers, made by
    Google's code): after every update, the weights and both moments equal Google's."""
    case = google_case(name)
    variables = make_variables()
    for variable, value in zip(variables, case["init"]):
        variable.assign(value)
    opt = GOOGLE_CASES[name]()
    n, scale = opt.accumulation_steps, opt.loss_scale_factor or 1.0
    for update, want in enumerate(case["weights"]):
        # the rate Google's schedule gave this update (schedule(update), counted in updates)
        assert float(opt.learning_rate) == pytest.approx(float(case["lr"][update]), rel=1e-6)
        micro = [
            [scale * g for g in grads] for grads in case["micro"][update * n : (update + 1) * n]
        ]
        got = run_optimizer(opt, variables, micro)
        assert int(opt.iterations) == update + 1
        assert max_diff(got, want) < 2e-6, update
        assert max_diff([x.numpy() for x in opt._momentums], case["m"][update]) < 1e-6
        assert max_diff([x.numpy() for x in opt._velocities], case["v"][update]) < 1e-6
    assert max_diff(got, case["init"]) > 1e-2


@pytest.mark.backends
def test_resume_mid_accumulation_from_optimizer_variables():
    """All state lives in the optimizer's variables: copying them (after 3 of 2x3 micro-steps)
    into a fresh optimizer continues exactly where the first left off."""
    grads = random_grads(make_variables(), 6, seed=11)
    straight = run_optimizer(
        create_optimizer(0.05, 4, 1, optimizer="lamb", gradient_accumulation_steps=2),
        make_variables(),
        grads,
    )
    variables = make_variables()
    opt = create_optimizer(0.05, 4, 1, optimizer="lamb", gradient_accumulation_steps=2)
    run_optimizer(opt, variables, grads[:3])
    variables2 = make_variables(seed=5)
    for target, source in zip(variables2, variables):
        target.assign(source.numpy())
    opt2 = create_optimizer(0.05, 4, 1, optimizer="lamb", gradient_accumulation_steps=2)
    opt2.build(variables2)
    for target, source in zip(opt2.variables, opt.variables):
        target.assign(source.numpy())
    assert int(opt2.iterations) == 1 and int(opt2._micro_step.numpy()) == 1
    resumed = run_optimizer(opt2, variables2, grads[3:])
    assert max_diff(straight, resumed) < 1e-6


@pytest.mark.backends
def test_none_gradient_leaves_its_variable():
    variables = make_variables()
    start = [v.numpy() for v in variables]
    grads = random_grads(variables, 1)[0]
    opt = AdamWeightDecay(0.1)
    opt.apply(grads[:1] + [None] * 5, variables)
    got = [v.numpy() for v in variables]
    assert max_diff(got[1:], start[1:]) == 0.0 and max_diff(got[:1], start[:1]) > 1e-2


# ---------------------------------------------------------------------------------------------
# model.fit: accumulation equivalence, XLA, loss scaling, saving


def small_model():
    """A tiny regression net with a LayerNorm and biases, deterministic initial weights."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    x = keras.layers.Dense(8, activation="tanh", name="dense")(inputs)
    x = keras.layers.LayerNormalization(name="layer_norm")(x)
    outputs = keras.layers.Dense(1, name="out")(x)
    return keras.Model(inputs, outputs)


DATA_RNG = np.random.default_rng(3)
X = DATA_RNG.normal(size=(32, 4)).astype("float32")
Y = (10.0 * DATA_RNG.normal(size=(32, 1))).astype("float32")  # large: clipping engages


def fit_weights(kind, batch_size, accumulation, jit_compile=None, wrap=None):
    """Train small_model for 2 epochs of X without shuffling; return weights and iterations.
    jit_compile None: each backend's usual training (graph mode on TF, jitted on JAX)."""
    if jit_compile is None:
        jit_compile = not ON_TF
    model = small_model()
    optimizer = create_optimizer(
        1e-2,
        num_train_steps=6,
        num_warmup_steps=2,
        optimizer=kind,
        gradient_accumulation_steps=accumulation,
    )
    model.compile(wrap(optimizer) if wrap else optimizer, "mse", jit_compile=jit_compile)
    model.fit(X, Y, batch_size=batch_size, epochs=2, shuffle=False, verbose=0)
    return [w.numpy() for w in model.trainable_weights], int(optimizer.iterations), model


@pytest.mark.backends
@pytest.mark.parametrize("kind", ["adamw", "lamb"])
def test_accumulation_equivalence_with_fit(kind):
    big, big_iters, _ = fit_weights(kind, batch_size=16, accumulation=1)
    acc, acc_iters, _ = fit_weights(kind, batch_size=4, accumulation=4)
    small, _, _ = fit_weights(kind, batch_size=4, accumulation=1)
    assert big_iters == acc_iters == 4
    assert max_diff(big, acc) < 1e-6
    assert max_diff(big, small) > 1e-3  # the comparison can tell batches apart


@tf_only  # on JAX every other fit test is jitted already
def test_fit_with_jit_compile():
    plain, _, _ = fit_weights("lamb", batch_size=8, accumulation=2, jit_compile=False)
    jit, iters, model = fit_weights("lamb", batch_size=8, accumulation=2, jit_compile=True)
    assert model.jit_compile and iters == 4
    assert max_diff(plain, jit) < 1e-6


@pytest.mark.backends
def test_loss_scale_optimizer_wrapping_is_transparent():
    plain, _, _ = fit_weights("adamw", batch_size=8, accumulation=2)
    scaled, iters, _ = fit_weights(
        "adamw", batch_size=8, accumulation=2, wrap=keras.optimizers.LossScaleOptimizer
    )
    assert iters == 4 and max_diff(plain, scaled) < 1e-6


@tf_only
def test_checkpoint_resume_mid_accumulation(tmp_path):
    """Saving after 3 of 2x3 micro-steps and restoring gives the uninterrupted result."""
    grads = random_grads(make_variables(), 6, seed=11)
    variables = make_variables()
    straight = run_optimizer(
        create_optimizer(0.05, 4, 1, optimizer="lamb", gradient_accumulation_steps=2),
        variables,
        grads,
    )
    variables = make_variables()
    opt = create_optimizer(0.05, 4, 1, optimizer="lamb", gradient_accumulation_steps=2)
    run_optimizer(opt, variables, grads[:3])
    ckpt = tf.train.Checkpoint(optimizer=opt, variables=variables)
    path = ckpt.write(str(tmp_path / "ckpt"))
    variables2 = make_variables(seed=5)
    opt2 = create_optimizer(0.05, 4, 1, optimizer="lamb", gradient_accumulation_steps=2)
    opt2.build(variables2)
    tf.train.Checkpoint(optimizer=opt2, variables=variables2).read(path).assert_consumed()
    assert int(opt2.iterations) == 1 and int(opt2._micro_step.numpy()) == 1
    resumed = run_optimizer(opt2, variables2, grads[3:])
    assert max_diff(straight, resumed) < 1e-6


@pytest.mark.backends
def test_keras_model_save_and_load_keeps_optimizer(tmp_path):
    _, _, model = fit_weights("lamb", batch_size=8, accumulation=2)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert isinstance(loaded.optimizer, LAMB)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    assert int(loaded.optimizer.iterations) == 4


# ---------------------------------------------------------------------------------------------
# Serialization and argument checking


@pytest.mark.backends
@pytest.mark.parametrize("cls", [AdamWeightDecay, LAMB])
def test_config_round_trip(cls):
    schedule = WarmupPolynomialDecay(3e-4, 100, 10)
    opt = cls(
        schedule,
        weight_decay_rate=0.02,
        exclude_from_weight_decay=["bias"],
        bias_correction=True,
        clip_norm=2.0,
        gradient_accumulation_steps=4,
        epsilon=1e-7,
    )
    config = opt.get_config()
    for key in ("weight_decay", "global_clipnorm", "clipnorm", "use_ema"):
        assert key not in config
    again = cls.from_config(copy.deepcopy(config))
    assert type(again) is cls and again.get_config() == config
    assert again.accumulation_steps == 4 and again.clip_norm == 2.0 and again.bias_correction
    assert float(again.learning_rate) == float(schedule(0))
    generic = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
    assert type(generic) is cls and generic.get_config() == config
    if cls is LAMB:
        assert again.layer_adaptation_exclusions == ["bias"]


@pytest.mark.backends
def test_create_optimizer_defaults():
    opt = create_optimizer(1e-4, 1000, 100, optimizer="LAMB")
    assert isinstance(opt, LAMB)
    assert (opt.beta_1, opt.beta_2, opt.epsilon, opt.weight_decay_rate) == (0.9, 0.999, 1e-6, 0.01)
    assert opt.weight_decay_exclusions == GOOGLE_PATTERNS
    assert opt.layer_adaptation_exclusions == GOOGLE_PATTERNS
    assert opt.clip_norm == 1.0 and not opt.bias_correction and opt.accumulation_steps == 1
    assert isinstance(create_optimizer(1e-4, 10, 0), AdamWeightDecay)
    assert opt_lib.GOOGLE_EXCLUSIONS == tuple(GOOGLE_PATTERNS)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"optimizer": "sgd"}, "optimizer"),
        ({"init_lr": 0.0}, "init_lr"),
        ({"num_train_steps": 0}, "num_train_steps"),
        ({"num_warmup_steps": -1}, "num_warmup_steps"),
        ({"poly_power": 0.0}, "poly_power"),
        ({"start_warmup_step": -2}, "start_warmup_step"),
        ({"weight_decay_rate": -0.1}, "weight_decay_rate"),
        ({"clip_norm": 0.0}, "clip_norm"),
        ({"gradient_accumulation_steps": 0}, "gradient_accumulation_steps"),
        ({"gradient_accumulation_steps": 2.5}, "gradient_accumulation_steps"),
        ({"bias_correction": "yes"}, "bias_correction"),
    ],
)
@pytest.mark.backends
def test_create_optimizer_rejects_bad_arguments(kwargs, name):
    args = {"init_lr": 1e-3, "num_train_steps": 10, "num_warmup_steps": 1, **kwargs}
    with pytest.raises(ValueError, match=f"`{name}`"):
        create_optimizer(**args)


@pytest.mark.backends
def test_keras_duplicate_options_are_rejected():
    with pytest.raises(ValueError, match="clip_norm"):
        LAMB(1e-3, global_clipnorm=1.0)
    with pytest.raises(ValueError, match="weight_decay_rate"):
        AdamWeightDecay(1e-3, weight_decay=0.01)
    with pytest.raises(ValueError, match="exclude_from_weight_decay"):
        AdamWeightDecay(1e-3, exclude_from_weight_decay="bias")


# ---------------------------------------------------------------------------------------------
# tf.distribute: two logical CPUs, in a fresh process (logical devices must precede TF init)

_MIRRORED_SCRIPT = textwrap.dedent("""
    import json, os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np, tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import albert_tf, keras
    from albert_tf.engine.optimizers import create_optimizer

    rng = np.random.default_rng(3)
    X = rng.normal(size=(32, 4)).astype("float32")
    Y = (10.0 * rng.normal(size=(32, 1))).astype("float32")

    def run(strategy, batch, n):
        with strategy.scope():
            keras.utils.set_random_seed(0)
            inp = keras.Input((4,))
            h = keras.layers.LayerNormalization(name="layer_norm")(
                keras.layers.Dense(8, activation="tanh", name="dense")(inp))
            model = keras.Model(inp, keras.layers.Dense(1, name="out")(h))
            opt = create_optimizer(1e-2, 6, 2, optimizer="lamb", gradient_accumulation_steps=n)
            model.compile(opt, "mse")
        model.fit(tf.data.Dataset.from_tensor_slices((X, Y)).batch(batch), epochs=2, verbose=0)
        return [w.numpy() for w in model.trainable_weights], int(opt.iterations.numpy())

    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    ref, ref_it = run(tf.distribute.get_strategy(), 16, 1)
    out = {"replicas": mirrored.num_replicas_in_sync, "ref_iterations": ref_it}
    for name, batch, n in [("mirrored", 16, 1), ("mirrored_accumulated", 8, 2)]:
        w, it = run(mirrored, batch, n)
        out[name] = [max(float(np.abs(a - b).max()) for a, b in zip(ref, w)), it]
    print("RESULT" + json.dumps(out))
""")


@tf_only
def test_mirrored_strategy_matches_one_device():
    """Clipping acts on the all-reduced gradient, so 2 replicas (with and without accumulation)
    give one device's weights at the same global batch; per-replica clipping would not."""
    out = run_script(_MIRRORED_SCRIPT)
    assert out["replicas"] == 2 and out["ref_iterations"] == 4
    for name in ("mirrored", "mirrored_accumulated"):
        diff, iterations = out[name]
        assert iterations == 4 and diff < 1e-6, (name, diff)


def run_script(script):
    """Run `script` in a fresh Python at the repository root; return its RESULT json."""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(opt_lib.__file__).rsplit("/", 3)[0],
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT") :])


# JAX: two forced host devices, keras.distribution.DataParallel (XLA_FLAGS must precede JAX)
_DATA_PARALLEL_SCRIPT = textwrap.dedent("""
    import json, os
    os.environ["KERAS_BACKEND"] = "jax"
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import numpy as np, jax, keras
    from albert_tf.engine.optimizers import create_optimizer

    rng = np.random.default_rng(3)
    X = rng.normal(size=(32, 4)).astype("float32")
    Y = (10.0 * rng.normal(size=(32, 1))).astype("float32")

    def run(batch, n):
        keras.utils.set_random_seed(0)
        inp = keras.Input((4,))
        h = keras.layers.LayerNormalization(name="layer_norm")(
            keras.layers.Dense(8, activation="tanh", name="dense")(inp))
        model = keras.Model(inp, keras.layers.Dense(1, name="out")(h))
        opt = create_optimizer(1e-2, 6, 2, optimizer="lamb", gradient_accumulation_steps=n)
        model.compile(opt, "mse")
        model.fit(X, Y, batch_size=batch, epochs=2, shuffle=False, verbose=0)
        return [w.numpy() for w in model.trainable_weights], int(opt.iterations)

    ref, ref_it = run(16, 1)
    data_parallel = keras.distribution.DataParallel(devices=jax.devices())
    out = {"devices": len(jax.devices()), "ref_iterations": ref_it}
    for name, batch, n in [("data_parallel", 16, 1), ("data_parallel_accumulated", 8, 2)]:
        with data_parallel.scope():
            w, it = run(batch, n)
        out[name] = [max(float(np.abs(a - b).max()) for a, b in zip(ref, w)), it]
    print("RESULT" + json.dumps(out))
""")


@pytest.mark.backends
@pytest.mark.skipif(ON_TF, reason="the JAX counterpart of the MirroredStrategy test")
def test_data_parallel_matches_one_device():
    """On JAX the gradient of the sharded global batch is already global, so clipping and
    accumulation see what one device sees: 2 devices give one device's weights."""
    out = run_script(_DATA_PARALLEL_SCRIPT)
    assert out["devices"] == 2 and out["ref_iterations"] == 4
    for name in ("data_parallel", "data_parallel_accumulated"):
        diff, iterations = out[name]
        assert iterations == 4 and diff < 1e-6, (name, diff)


@tf_only
def test_plain_tf_variables_and_none_gradients():
    """Raw tf.Variables work (name without ':0' is matched); a None gradient leaves its variable."""
    w = tf.Variable(np.ones((2, 2), np.float32), name="dense/kernel")
    b = tf.Variable(np.ones(2, np.float32), name="dense/bias")
    opt = AdamWeightDecay(0.1, clip_norm=None)
    opt.apply_gradients([(tf.ones((2, 2)), w), (None, b)])
    np.testing.assert_array_equal(b.numpy(), np.ones(2, np.float32))
    u = 0.1 / (np.sqrt(1e-3) + 1e-6) + 0.01  # decayed: dense/kernel is not excluded
    np.testing.assert_allclose(w.numpy(), 1.0 - 0.1 * u, rtol=1e-5)
    assert opt._use_decay == [True, False]
