"""recompute_grad: each shared block recomputed in the backward pass gives the same loss and
gradients as keeping its activations, dropout included (the recomputation redraws the forward
pass's masks), and the flag reaches the model through the config."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.modeling.finetuning_models import AlbertClassifier


def _config(fixtures_dir, **kw):
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    return config.replace(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, **kw)


def _loss_and_grads(model, features):
    @tf.function
    def step():
        with tf.GradientTape() as tape:
            out = model(features, training=True)
            loss = tf.reduce_sum(out["logits"] ** 2)
        return loss, tape.gradient(loss, model.trainable_variables)

    return step()


def test_recompute_grad_gives_the_same_gradients(fixtures_dir, inner_group_num=2):
    rng = np.random.default_rng(0)
    mask = np.ones((2, 16), np.int32)
    mask[1, 9:] = 0
    features = {
        "input_ids": tf.constant(rng.integers(5, 900, (2, 16)), tf.int32),
        "input_mask": tf.constant(mask),
        "segment_ids": tf.zeros((2, 16), tf.int32),
    }
    models = []
    for recompute in (False, True):
        keras.utils.set_random_seed(1)
        config = _config(
            fixtures_dir,
            recompute_grad=recompute,
            inner_group_num=inner_group_num,
            num_hidden_layers=2,  # the one group's blocks each applied twice: shared, and quick
        )
        model = AlbertClassifier(config, 3)
        model(features)
        models.append(model)
    for a, b in zip(models[0].variables, models[1].variables):
        b.assign(a)
    (la, ga), (lb, gb) = (_loss_and_grads(m, features) for m in models)
    assert models[1].config.recompute_grad and not models[0].config.recompute_grad
    np.testing.assert_allclose(lb.numpy(), la.numpy(), rtol=1e-6)
    assert len(ga) == len(gb) > 10
    for x, y, v in zip(ga, gb, models[0].trainable_variables):
        assert y is not None, v.path
        np.testing.assert_allclose(
            tf.convert_to_tensor(y).numpy(),
            tf.convert_to_tensor(x).numpy(),
            atol=1e-5,
            rtol=1e-5,
            err_msg=v.path,
        )
    # the dropout states end where the forward pass left them (no drift from the recompute)
    for a, b in zip(models[0].variables, models[1].variables):
        if "seed_generator_state" in a.path:
            np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_recompute_grad_config_round_trip(fixtures_dir):
    config = _config(fixtures_dir)
    assert "recompute_grad" not in config.to_dict()  # a released config is written unchanged
    on = config.replace(recompute_grad=True)
    assert AlbertConfig.from_dict(on.to_dict()).recompute_grad is True
    with pytest.raises(ValueError, match="recompute_grad"):
        config.replace(recompute_grad="yes")


def _jax_loss_and_grads(model, features):
    """(loss, gradients, new non-trainable values, jaxpr text) of one JAX training step."""
    import jax  # deferred: only the JAX backend's test imports JAX

    trainable = [v.value for v in model.trainable_variables]
    others = [v.value for v in model.non_trainable_variables]

    def loss_fn(trainable):
        out, new = model.stateless_call(trainable, others, features, training=True)
        return keras.ops.sum(out["logits"] ** 2), new

    step = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, new), grads = jax.jit(step)(trainable)
    return loss, grads, new, str(jax.make_jaxpr(loss_fn)(trainable))


@pytest.mark.backends
@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX backend's remat path")
@pytest.mark.parametrize("sharing,inner", [("all", 2), ("none", 1)])
def test_remat_gives_the_same_gradients_on_jax(fixtures_dir, sharing, inner):
    """On JAX each block application is a keras.remat (jax.checkpoint) function: same loss,
    gradients and dropout seed states as keeping the activations, dropout on."""
    rng = np.random.default_rng(0)
    mask = np.ones((2, 16), np.int32)
    mask[1, 9:] = 0
    features = {
        "input_ids": rng.integers(5, 900, (2, 16)).astype(np.int32),
        "input_mask": mask,
        "segment_ids": np.zeros((2, 16), np.int32),
    }
    models = []
    for recompute in (False, True):
        keras.utils.set_random_seed(1)
        config = _config(
            fixtures_dir,
            recompute_grad=recompute,
            sharing=sharing,
            inner_group_num=inner,
            num_hidden_layers=2,  # JAX compiles every block application: keep the test quick
        )
        models.append(AlbertClassifier(config, 3))
    for a, b in zip(models[0].variables, models[1].variables):
        b.assign(a)
    (la, ga, na, plain), (lb, gb, nb, remat) = (_jax_loss_and_grads(m, features) for m in models)
    rematerialized = re.compile(r"\b(checkpoint|remat\d*)\[")  # jax.checkpoint's primitive
    assert rematerialized.search(remat) and not rematerialized.search(plain)
    np.testing.assert_allclose(np.asarray(lb), np.asarray(la), rtol=1e-6)
    for x, y, v in zip(ga, gb, models[0].trainable_variables):
        np.testing.assert_allclose(
            np.asarray(y), np.asarray(x), atol=1e-5, rtol=1e-5, err_msg=v.path
        )
    assert any("seed_generator_state" in v.path for v in models[0].non_trainable_variables)
    for x, y in zip(na, nb):
        np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
