"""The ALBERT encoder's inference math, on the model's own variables, written in the op patterns
that ONNX Runtime's transformer optimizer (`onnxruntime.transformers.optimizer`, model type
"bert") fuses into Attention, SkipLayerNormalization and FastGelu: `export_onnx(optimize=True)`
converts this form.

The Keras layers compute the same function in forms that suit TensorFlow, which after tf2onnx
match none of the optimizer's patterns: Dense layers on [B·T, H] rows (so grappler fuses MatMul,
bias and GELU), the query scaled before the scores, Keras' LayerNormalization with a reciprocal
square root, the mask adder by a reshape. Here instead:

- LayerNorm: ReduceMean → Sub → Pow(2) → ReduceMean → Add(ε) → Sqrt → Div → Mul(γ) → Add(β);
- every dense layer a MatMul + Add on [B, T, H], so q, k and v are three MatMuls of the block
  input;
- scores MatMul(q, kᵀ) / sqrt(head size) + mask adder, the divisor computed from q's shape:
  grappler turns a division by a constant into a Mul, which the optimizer cannot tell from the
  mask adder's Mul;
- the mask adder Unsqueeze → Unsqueeze → Cast → Sub(1, ·) → Mul(-10000);
- the attention output first in the residual sum, so that the first block's LayerNorm finds the
  attention's output projection on its first input, not the embedding projection.

Inference only (no dropout), float32, padded [B, T] inputs (padding-free packing is a training
and TensorFlow-serving choice; the result is the same).
"""

import tensorflow as tf

from albert_tf.modeling.albert_model import AlbertModel
from albert_tf.modeling.model_base import standardize_inputs
from albert_tf.modeling.transformer import MASK_ADDER


def layer_norm(x, layer):
    """Keras `layer` (a LayerNormalization over the last axis) applied in the fusable form."""
    mean = tf.reduce_mean(x, -1, keepdims=True)
    centered = x - mean
    variance = tf.reduce_mean(tf.pow(centered, 2.0), -1, keepdims=True)
    return centered / tf.sqrt(variance + layer.epsilon) * layer.gamma + layer.beta


def dense(x, layer):
    """Keras Dense `layer` on x [..., in] as MatMul + Add (+ its activation)."""
    y = tf.matmul(x, layer.kernel)
    if layer.use_bias:
        y = y + layer.bias
    return layer.activation(y)


def _heads(x, sublayer, perm):
    """[B, T, H] → [B, T, heads, D], transposed by `perm`."""
    shape = tf.shape(x)
    x = tf.reshape(x, [shape[0], shape[1], sublayer.num_heads, sublayer.head_size])
    return tf.transpose(x, perm)


def attention_block(x, adder, sublayer):
    """An AttentionSublayer's inference: LN(W_o · MultiHeadSelfAttention(x) + x)."""
    q = _heads(dense(x, sublayer.query), sublayer, [0, 2, 1, 3])
    k = _heads(dense(x, sublayer.key), sublayer, [0, 2, 3, 1])
    v = _heads(dense(x, sublayer.value), sublayer, [0, 2, 1, 3])
    scale = tf.sqrt(tf.cast(tf.shape(q)[3], x.dtype))
    probs = tf.nn.softmax(tf.matmul(q, k) / scale + adder, axis=-1)
    context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
    shape = tf.shape(x)
    context = tf.reshape(context, [shape[0], shape[1], sublayer.num_heads * sublayer.head_size])
    return layer_norm(dense(context, sublayer.output_dense) + x, sublayer.layer_norm)


def feed_forward_block(x, sublayer):
    """A FeedForwardSublayer's inference: LN(W_2 · act(W_1 · x) + x)."""
    y = dense(dense(x, sublayer.intermediate), sublayer.output_dense)
    return layer_norm(y + x, sublayer.layer_norm)


def mask_adder(input_mask):
    """[B, T] 0/1 → [B, 1, 1, T]: 0 for real keys, -10000 for padding."""
    mask = tf.cast(tf.expand_dims(tf.expand_dims(input_mask, 1), 1), tf.float32)
    return (1.0 - mask) * MASK_ADDER


def embed(embedding, input_ids, segment_ids):
    """A FactorizedEmbedding's inference: (hidden [B, T, H], embedding_output [B, T, E])."""
    x = tf.gather(embedding.word_embeddings.embeddings, input_ids)
    x = x + tf.gather(embedding.token_type_embeddings, segment_ids)
    x = x + embedding.position_embeddings[: tf.shape(input_ids)[1]][None]
    embedding_output = layer_norm(x, embedding.layer_norm)
    if embedding.projection is None:
        return embedding_output, embedding_output
    return dense(embedding_output, embedding.projection), embedding_output


def encoder_outputs(albert, inputs, training=None):
    """What `albert(inputs)` returns (an AlbertModel), computed in the fusable form.

    Args:
        albert: the AlbertModel whose variables are used.
        inputs: a feature dict (input_ids, and optionally input_mask, segment_ids).
        training: must be falsy: this form has no dropout.

    Returns:
        The dict of AlbertModel.call: sequence_output, pooled_output, encoder_outputs,
        embedding_output.
    """
    assert not training, "the fusable encoder is for inference"
    input_ids, input_mask, segment_ids = standardize_inputs(inputs)
    hidden, embedding_output = embed(albert.embedding, input_ids, segment_ids)
    adder = mask_adder(input_mask)
    outputs = []
    for block in albert.encoder.blocks:
        hidden = attention_block(hidden, adder, block.attention)
        hidden = feed_forward_block(hidden, block.ffn)
        outputs.append(hidden)
    return {
        "sequence_output": hidden,
        "pooled_output": albert.pooler(hidden),
        "encoder_outputs": outputs,
        "embedding_output": embedding_output,
    }


class _WithFusableEncoder:
    """A task model seen with its `albert` encoder replaced by the fusable form, so that the
    task model's own `call` (its heads) runs unchanged on top; every other attribute is the
    model's."""

    def __init__(self, model):
        self.__dict__["_model"] = model
        self.__dict__["albert"] = lambda inputs, training=None: encoder_outputs(
            model.albert, inputs, training
        )

    def __getattr__(self, name):
        return getattr(self._model, name)


def _feature_call(model):
    """The `call` of the first albert_tf modeling class in the model's MRO: the feature-dict
    path, whatever a subclass adds for raw text."""
    for cls in type(model).__mro__:
        if "call" in vars(cls) and cls.__module__.startswith("albert_tf.modeling."):
            return vars(cls)["call"]
    raise TypeError(f"{type(model).__name__} is no albert_tf model")


def fusable_outputs(model, features):
    """`model(features, training=False)` with the encoder in the fusable form (the heads are
    the model's own code).

    Args:
        model: an AlbertModel, or an albert_tf task model that reaches its encoder through
            `self.albert` (every albert_tf task model does).
        features: a dict of int32 [batch, length] tensors, the model's serving features.

    Returns:
        The model's output dict.
    """
    if isinstance(model, AlbertModel):
        return encoder_outputs(model, features)
    return _feature_call(model)(_WithFusableEncoder(model), features, training=False)
