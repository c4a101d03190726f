"""Activations by Google's config names; "gelu" is the tanh approximation Google's code computes."""
import keras


def _gelu_tanh(x):
    return keras.activations.gelu(x, approximate=True)


def _gelu_erf(x):
    return keras.activations.gelu(x, approximate=False)


_ACTIVATIONS = {
    "gelu": _gelu_tanh,        # Google's modeling.gelu is the tanh form
    "gelu_new": _gelu_tanh,    # Hugging Face's name for the same function
    "gelu_exact": _gelu_erf,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "linear": keras.activations.linear,
}


def get_activation(name: str):
    """Map an albert_config.json `hidden_act` to a callable; unknown names fail clearly."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"Unknown hidden_act {name!r}; use one of {sorted(_ACTIVATIONS)}") from None
