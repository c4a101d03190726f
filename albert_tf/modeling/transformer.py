"""The post-LN Transformer block, split into the two sublayers that ALBERT can share separately.

Each sublayer owns the LayerNorm that follows it, so sharing a sublayer shares its LayerNorm too
(in Google's checkpoints: `attention_1` + `LayerNorm`, `ffn_1` + `LayerNorm_1`).
"""

import contextlib
import math

import keras
from keras import ops

from albert_tf.modeling.activations import get_activation, get_training_activation
from albert_tf.modeling.common import dense, layer_norm

MASK_ADDER = -10000.0  # Google's adder for padded keys' attention scores
# the adder models are traced with now: a module global, not a context variable, because a
# tf.distribute strategy traces its replicas' calls in threads of its own
_traced_adder = [MASK_ADDER]


@contextlib.contextmanager
def traced_mask_adder(value: float):
    """Within it, models traced add `value` (not -10000) to padded keys' attention scores.

    For a graph whose activations get int8 ranges (a full-integer LiteRT file): -10000 would
    widen the scores' shared range so far that every real score rounds to one step. A value
    that still sends a padded key's softmax weight below float32's resolution (e.g. -100:
    exp(-100) < 1e-43) changes nothing a float model computes. Eager calls outside it are
    untouched.

    Args:
        value: The adder, a negative float.

    Yields:
        None.
    """
    before = _traced_adder[0]
    _traced_adder[0] = float(value)
    try:
        yield
    finally:
        _traced_adder[0] = before


def attention_mask_adder(input_mask, dtype):
    """[B,T] 0/1 mask → [B,1,1,T] adder: 0 for real keys, -10000 for padding (Google's value;
    see `traced_mask_adder`)."""
    # a reshape, not mask[:, None, None, :]: LiteRT has no built-in op for a new-axis slice
    mask = ops.reshape(ops.cast(input_mask, dtype), (ops.shape(input_mask)[0], 1, 1, -1))
    return (1.0 - mask) * _traced_adder[0]


class AttentionSublayer(keras.layers.Layer):
    """`LN(x + dropout(W_o · MultiHeadSelfAttention(x)))` with q/k/v kernels stored [H, heads·D]."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        h = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_size = config.head_size
        self.query = dense(h, config, "query")
        self.key = dense(h, config, "key")
        self.value = dense(h, config, "value")
        self.output_dense = dense(h, config, "output_dense")
        self.attention_dropout = keras.layers.Dropout(config.attention_probs_dropout_prob)
        self.output_dropout = keras.layers.Dropout(config.hidden_dropout_prob)
        self.layer_norm = layer_norm("attention_layer_norm")

    def build(self, input_shape=None):
        shape = (None, None, self.config.hidden_size)
        for sub in (self.query, self.key, self.value, self.output_dense):
            sub.build(shape)
        self.layer_norm.build(shape)
        self.built = True

    def call(self, x, adder, training=None, rows=None):
        """x [B,T,H]; or, padding-free (`rows`: a TokenRows), the real tokens' rows [N,H]."""
        h = self.config.hidden_size
        if rows is None:
            b, t = ops.shape(x)[0], ops.shape(x)[1]
            flat = ops.reshape(x, (-1, h))  # [B·T, H]: see FeedForwardSublayer.call
            spread = gather = lambda r: r
        else:
            b, t, flat, spread, gather = rows.batch, rows.length, x, rows.unpack, rows.pack
        heads = (b, t, self.num_heads, self.head_size)
        # the 1/sqrt(D) scale on the queries [B,T,H], not on the scores [B,heads,T,T]: fewer
        # multiplies, and exact for D = 64 (0.125, a power of two), the released models' head size
        q = ops.reshape(spread(self.query(flat) * (1.0 / math.sqrt(self.head_size))), heads)
        k = ops.reshape(spread(self.key(flat)), heads)
        v = ops.reshape(spread(self.value(flat)), heads)
        scores = ops.einsum("btnd,bsnd->bnts", q, k)
        scores = ops.cast(scores, "float32") + ops.cast(adder, "float32")
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.attention_dropout(probs, training=training)
        context = gather(ops.reshape(ops.einsum("bnts,bsnd->btnd", probs, v), (-1, h)))
        attended = self.output_dropout(self.output_dense(context), training=training)
        out = ops.cast(self.layer_norm(flat + attended), self.compute_dtype)
        return out if rows is not None else ops.reshape(out, (b, t, h))

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}


class FeedForwardSublayer(keras.layers.Layer):
    """`LN(x + dropout(W_2 · act(W_1 · x)))`; Google's `ffn_1/intermediate{,/output}/dense`."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.intermediate = dense(
            config.intermediate_size,
            config,
            "intermediate",
            activation=get_activation(config.hidden_act),
        )
        self.training_activation = get_training_activation(config.hidden_act)
        self.output_dense = dense(config.hidden_size, config, "output_dense")
        self.dropout = keras.layers.Dropout(config.hidden_dropout_prob)
        self.layer_norm = layer_norm("ffn_layer_norm")

    def build(self, input_shape=None):
        self.intermediate.build((None, None, self.config.hidden_size))
        self.output_dense.build((None, None, self.config.intermediate_size))
        self.layer_norm.build((None, None, self.config.hidden_size))
        self.built = True

    def call(self, x, training=None):
        # Dense layers on 2-D [B·T, H] rows, not [B,T,H]: then TensorFlow's grappler fuses each
        # MatMul with its bias add (and GELU) into one oneDNN kernel; on 3-D inputs it cannot
        shape = ops.shape(x)
        flat = ops.reshape(x, (-1, self.config.hidden_size))
        y = self.dropout(self.output_dense(self._intermediate(flat, training)), training=training)
        return ops.reshape(ops.cast(self.layer_norm(flat + y), self.compute_dtype), shape)

    def _intermediate(self, flat, training):
        """act(W_1·x + b_1). Inference calls the Dense layer itself (its MatMul, bias add and GELU
        fuse into one oneDNN kernel); training applies the activation with its cheaper
        hand-written gradient (the pre-activation is kept for the backward pass anyway)."""
        if not training or self.training_activation is self.intermediate.activation:
            return self.intermediate(flat)
        kernel = ops.cast(self.intermediate.kernel, self.compute_dtype)
        bias = ops.cast(self.intermediate.bias, self.compute_dtype)
        return self.training_activation(ops.matmul(flat, kernel) + bias)

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}


class TransformerBlock:
    """One post-LN block: an attention sublayer then a feed-forward sublayer.

    A plain composition (not a Keras layer), so that blocks can share one sublayer without Keras
    tracking it twice; the encoder owns and tracks the sublayers themselves.
    """

    def __init__(self, attention: AttentionSublayer, ffn: FeedForwardSublayer):
        self.attention = attention
        self.ffn = ffn

    def __call__(self, x, adder, training=None, rows=None):
        """x [B,T,H] → [B,T,H]; padding-free (`rows`, see padding_free.py): [N,H] → [N,H]."""
        return self.ffn(self.attention(x, adder, training=training, rows=rows), training=training)
