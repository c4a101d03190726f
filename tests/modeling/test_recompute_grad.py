"""recompute_grad: each shared block recomputed in the backward pass gives the same loss and
gradients as keeping its activations, dropout included (the recomputation redraws the forward
pass's masks), and the flag reaches the model through the config."""

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
        model = AlbertClassifier(
            _config(fixtures_dir, recompute_grad=recompute, inner_group_num=inner_group_num), 3
        )
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
