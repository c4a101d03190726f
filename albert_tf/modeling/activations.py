"""Activations by Google's config names; "gelu" is the tanh approximation Google's code computes."""

import keras


def _gelu_tanh(x):
    return keras.activations.gelu(x, approximate=True)


_SQRT_2_OVER_PI = 0.7978845608028654
_GELU_CUBIC = 0.044715


@keras.ops.custom_gradient
def _gelu_tanh_fast_gradient(x):
    """The tanh GELU for training, with a 16-bit x computed in float32 and rounded back once:
    on CPU, TensorFlow's bfloat16 elementwise kernels are slower than its float32 ones (tanh
    2.1x, add 2.9x on [1024, 3072]), and float32 is at least as exact."""
    ops = keras.ops
    dtype = keras.backend.standardize_dtype(x.dtype)
    work = "float32" if dtype in ("bfloat16", "float16") else dtype
    y, slope_grad = _gelu_tanh_parts(ops.cast(x, work))

    def grad(*args, upstream=None):
        upstream = args[0] if upstream is None else upstream
        return ops.cast(slope_grad(ops.cast(upstream, work)), dtype)

    return ops.cast(y, dtype), grad


def _gelu_tanh_parts(x):
    """(value, upstream → gradient) of the tanh GELU with a hand-written derivative: autodiff
    of the composite (pow, tanh, five multiplies) makes about twice the elementwise passes over
    [B·T, I], which dominate a mixed-bf16 step on CPU. d/dx = ½(1+t) + ½x(1-t²)·c(1+3a·x²), t =
    tanh(c(x+a·x³))."""
    ops = keras.ops
    x2 = ops.square(x)
    t = ops.tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x2))
    half_x = 0.5 * x

    def grad(upstream):
        slope = 0.5 * (1.0 + t) + half_x * (1.0 - ops.square(t)) * (
            _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_CUBIC * x2)
        )
        return upstream * slope

    return half_x * (1.0 + t), grad


def _gelu_erf(x):
    return keras.activations.gelu(x, approximate=False)


_ACTIVATIONS = {
    "gelu": _gelu_tanh,  # Google's modeling.gelu is the tanh form
    "gelu_new": _gelu_tanh,  # Hugging Face's name for the same function
    "gelu_exact": _gelu_erf,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "linear": keras.activations.linear,
}


# activations with a cheaper gradient of the same function, used by training calls only (an
# inference graph keeps the plain composite, which grappler fuses into the MatMul kernel)
_TRAINING_ACTIVATIONS = {"gelu": _gelu_tanh_fast_gradient, "gelu_new": _gelu_tanh_fast_gradient}


def get_training_activation(name: str):
    """The activation of `name` as training calls it: the same function, possibly with a
    hand-written gradient."""
    return _TRAINING_ACTIVATIONS.get(name) or get_activation(name)


def get_activation(name: str):
    """Map an albert_config.json `hidden_act` to a callable; unknown names fail clearly."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(
            f"Unknown hidden_act {name!r}; use one of {sorted(_ACTIVATIONS)}"
        ) from None
