"""Pretraining heads: the pooler, the tied masked-LM head and the sentence-order head."""

import keras
from keras import ops

from albert_tf.modeling.activations import get_activation
from albert_tf.modeling.common import dense, initializer, layer_norm


class Pooler(keras.layers.Layer):
    """dense(H) + tanh on the first token ([CLS]); Google's `bert/pooler/dense`."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.dense = dense(config.hidden_size, config, "dense", activation="tanh")

    def build(self, input_shape=None):
        self.dense.build((None, self.config.hidden_size))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}


def gather_positions(sequence, positions):
    """[B,T,H] gathered at [B,P] positions → [B,P,H]."""
    return ops.take_along_axis(sequence, ops.cast(positions, "int32")[:, :, None], axis=1)


class MaskedLMHead(keras.layers.Layer):
    """dense H→E with hidden_act, LayerNorm(E), then logits against the (tied) word embeddings
    plus the head's own output bias [V]. Logits are float32."""

    def __init__(self, config, word_embeddings, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.word_embeddings = word_embeddings  # a ReversibleEmbedding owned by the encoder
        self.transform = dense(
            config.embedding_size, config, "transform", activation=get_activation(config.hidden_act)
        )
        self.layer_norm = layer_norm("transform_layer_norm")

    def build(self, input_shape=None):
        self.transform.build((None, None, self.config.hidden_size))
        self.layer_norm.build((None, None, self.config.embedding_size))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.config.vocab_size,), initializer="zeros"
        )
        self.built = True

    def call(self, sequence_output, masked_lm_positions):
        x = gather_positions(sequence_output, masked_lm_positions)
        x = self.layer_norm(self.transform(x))
        logits = self.word_embeddings(ops.cast(x, "float32"), reverse=True)
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")


class PooledClassifierHead(keras.layers.Layer):
    """logits = pooled · Wᵀ + b with W stored [num_outputs, H] as Google's heads store it
    (`cls/seq_relationship/output_weights`, the classifier's `output_weights`). Optional dropout
    on the pooled input, as Google's fine-tuning heads use. Logits are float32."""

    def __init__(self, config, num_outputs, dropout_rate=0.0, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.num_outputs = num_outputs
        self.dropout_rate = dropout_rate
        self.dropout = keras.layers.Dropout(dropout_rate)

    def build(self, input_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights",
            shape=(self.num_outputs, self.config.hidden_size),
            initializer=initializer(self.config),
        )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.num_outputs,), initializer="zeros"
        )
        self.built = True

    def call(self, pooled_output, training=None):
        x = self.dropout(pooled_output, training=training)
        logits = ops.matmul(
            ops.cast(x, "float32"), ops.transpose(ops.cast(self.output_weights, "float32"))
        )
        return logits + ops.cast(self.output_bias, "float32")

    def get_config(self):
        return {
            **super().get_config(),
            "config": self.config.to_dict(),
            "num_outputs": self.num_outputs,
            "dropout_rate": self.dropout_rate,
        }
