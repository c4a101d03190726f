"""The activations by config name, and the training GELU's hand-written gradient."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.modeling.activations import get_activation, get_training_activation


def _value_and_grad(fn, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return y.numpy(), tape.gradient(y, x).numpy()


@pytest.mark.parametrize("name", ["gelu", "gelu_new"])
def test_training_gelu_is_the_same_function_with_the_same_gradient(name):
    x = tf.constant(np.random.default_rng(0).normal(0.0, 3.0, (4096,)), tf.float32)
    y, g = _value_and_grad(get_training_activation(name), x)
    y_ref, g_ref = _value_and_grad(get_activation(name), x)
    x64 = tf.cast(x, tf.float64)
    _, g_exact = _value_and_grad(get_activation(name), x64)
    np.testing.assert_allclose(y, y_ref, rtol=0, atol=1e-6)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-5)
    # as close to the float64 derivative as autodiff of the composite is
    assert np.abs(g - g_exact).max() <= np.abs(g_ref - g_exact).max() + 1e-6


def test_training_gelu_gradient_in_bfloat16_stays_bfloat16():
    x = tf.constant(np.linspace(-4, 4, 64), tf.bfloat16)
    y, g = _value_and_grad(get_training_activation("gelu"), x)
    _, g_ref = _value_and_grad(get_activation("gelu"), tf.cast(x, tf.float32))
    assert y.dtype == g.dtype == tf.bfloat16.as_numpy_dtype
    np.testing.assert_allclose(g.astype(np.float32), g_ref, atol=3e-2)


def test_training_gelu_of_bfloat16_is_computed_in_float32_and_rounded_once():
    """bf16 in, bf16 out, but the arithmetic in float32 (faster on CPU, and exact up to one
    rounding): value and gradient are the float32 ones rounded to bf16."""
    x = tf.constant(np.random.default_rng(1).normal(0.0, 3.0, (4096,)), tf.bfloat16)
    y, g = _value_and_grad(get_training_activation("gelu"), x)
    y32, g32 = _value_and_grad(get_training_activation("gelu"), tf.cast(x, tf.float32))
    np.testing.assert_array_equal(y, tf.cast(y32, tf.bfloat16).numpy())
    np.testing.assert_array_equal(g, tf.cast(g32, tf.bfloat16).numpy())


@pytest.mark.parametrize("name", ["relu", "gelu_exact", "tanh"])
def test_activations_without_a_hand_written_gradient_train_as_they_infer(name):
    assert get_training_activation(name) is get_activation(name)


def test_unknown_activation_names_the_choices():
    with pytest.raises(ValueError, match="Unknown hidden_act 'swish'"):
        get_training_activation("swish")
