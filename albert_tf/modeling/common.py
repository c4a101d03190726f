"""Small shared pieces of the modeling code: initializers and the float32 LayerNorm."""

import keras

LAYER_NORM_EPSILON = 1e-12  # tf.contrib.layers.layer_norm's, as in Google's ALBERT


def initializer(config):
    """Google's initializer: truncated normal with stddev initializer_range (truncated at 2σ)."""
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def layer_norm(name):
    """LayerNorm over the last axis with epsilon 1e-12, always computed in float32."""
    return keras.layers.LayerNormalization(
        axis=-1, epsilon=LAYER_NORM_EPSILON, name=name, dtype="float32"
    )


def dense(units, config, name, activation=None):
    """A Dense layer with Google's initializer and zero bias."""
    return keras.layers.Dense(
        units,
        activation=activation,
        kernel_initializer=initializer(config),
        bias_initializer="zeros",
        name=name,
    )
