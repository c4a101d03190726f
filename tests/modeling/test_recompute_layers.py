"""recompute_grad's whole-loop path (albert_tf/modeling/recompute.py) across the sharing modes,
hidden groups and inner groups, under mixed_bfloat16, and its point: the gradient graph sums a
shared variable's per-layer gradients as they come, never one AddN over all layers' copies."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.modeling.finetuning_models import AlbertClassifier


def _features(batch=2, seq=16):
    rng = np.random.default_rng(0)
    mask = np.ones((batch, seq), np.int32)
    mask[1, 9:] = 0
    return {
        "input_ids": tf.constant(rng.integers(5, 900, (batch, seq)), tf.int32),
        "input_mask": tf.constant(mask),
        "segment_ids": tf.zeros((batch, seq), tf.int32),
    }


def _models(fixtures_dir, features, **kw):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    config = config.replace(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, **kw)
    models = []
    for recompute in (False, True):
        keras.utils.set_random_seed(1)
        model = AlbertClassifier(config.replace(recompute_grad=recompute), 3)
        model(features)
        models.append(model)
    for a, b in zip(models[0].variables, models[1].variables):
        b.assign(a)
    return models


def _step(model, features):
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.cast(model(features, training=True)["logits"], tf.float32) ** 2)
        return loss, tape.gradient(loss, model.trainable_variables)

    return step


def _assert_same(models, features, tol, step=None):
    (la, ga), (lb, gb) = ((step(m) if step else _step(m, features))() for m in models)
    np.testing.assert_allclose(lb.numpy(), la.numpy(), rtol=tol)
    assert len(ga) == len(gb) > 10
    for x, y, v in zip(ga, gb, models[0].trainable_variables):
        assert y is not None, v.path
        np.testing.assert_allclose(
            tf.convert_to_tensor(y).numpy(),
            tf.convert_to_tensor(x).numpy(),
            atol=tol,
            rtol=tol,
            err_msg=v.path,
        )
    for a, b in zip(models[0].variables, models[1].variables):
        if "seed_generator_state" in a.path:
            np.testing.assert_array_equal(b.numpy(), a.numpy())


@pytest.mark.parametrize(
    "sharing,groups,inner,layers",
    # 4 layers where 2 groups must each be read by several layers; "none" shares nothing
    # across layers, so 2 layers of 2 inner groups carry its case
    [("all", 2, 1, 4), ("attention", 2, 2, 4), ("ffn", 1, 1, 4), ("none", 1, 2, 2)],
)
def test_same_gradients_across_sharing_and_groups(fixtures_dir, sharing, groups, inner, layers):
    features = _features()
    models = _models(
        fixtures_dir,
        features,
        sharing=sharing,
        num_hidden_groups=groups,
        inner_group_num=inner,
        num_hidden_layers=layers,
    )
    _assert_same(models, features, 1e-5)


def test_same_gradients_under_mixed_bfloat16(fixtures_dir):
    features = _features()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        # one group of 2 inner blocks read by 2 layers: shared, recomputed, in bfloat16
        models = _models(fixtures_dir, features, inner_group_num=2, num_hidden_layers=2)
        assert models[1].albert.encoder.attention_sublayers[0].compute_dtype == "bfloat16"
        _assert_same(models, features, 2e-2)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _max_addn_inputs(model, features):
    graph = _step(model, features).get_concrete_function().graph
    ops = [op for op in graph.get_operations() if op.type == "AddN"]
    for fn in graph._functions.values():  # ops inside nested functions, if any
        ops += [n for n in fn.definition.node_def if n.op == "AddN"]
    return max((len(op.inputs) if hasattr(op, "inputs") else len(op.input)) for op in ops)


def test_shared_gradients_are_summed_as_they_come(fixtures_dir):
    features = _features()
    off, on = _models(fixtures_dir, features, num_hidden_layers=6)
    assert _max_addn_inputs(off, features) >= 6  # one AddN over the 6 layers' copies
    assert _max_addn_inputs(on, features) < 6


def test_same_gradients_under_xla(fixtures_dir):
    """The whole-loop recompute (custom gradient, seed-state assigns, data dependencies) compiles
    under jit_compile and gives the compiled no-recompute path's loss and gradients, dropout on."""
    features = _features()
    models = _models(fixtures_dir, features, inner_group_num=2, num_hidden_layers=2)

    def compiled(model):
        @tf.function(jit_compile=True)
        def step():
            with tf.GradientTape() as tape:
                logits = model(features, training=True)["logits"]
                loss = tf.reduce_sum(tf.cast(logits, tf.float32) ** 2)
            return loss, tape.gradient(loss, model.trainable_variables)

        return step

    _assert_same(models, features, 1e-5, step=compiled)
