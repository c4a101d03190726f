"""The factorized embedding: V×E word, P×E position and T×E token-type tables, then E→H."""

import keras
from keras import ops

from albert_tf.modeling.common import dense, initializer, layer_norm


class FactorizedEmbedding(keras.layers.Layer):
    """ALBERT's embedding (paper §3.1): lookups at width E, LayerNorm and dropout at width E,
    then a linear projection to H only when E != H (Google's `embedding_hidden_mapping_in`).

    The word table is a `keras.layers.ReversibleEmbedding`, so the MLM decoder can be tied to it.
    Returns (hidden [B,T,H], embedding_output [B,T,E]).
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        e = config.embedding_size
        self.word_embeddings = keras.layers.ReversibleEmbedding(
            config.vocab_size,
            e,
            tie_weights=True,
            embeddings_initializer=initializer(config),
            reverse_dtype="float32",
            name="word_embeddings",
        )
        self.layer_norm = layer_norm("embeddings_layer_norm")
        self.dropout = keras.layers.Dropout(config.hidden_dropout_prob)
        self.projection = (
            dense(config.hidden_size, config, "embedding_hidden_mapping_in")
            if e != config.hidden_size
            else None
        )

    def build(self, input_shape=None):
        c = self.config
        e = c.embedding_size
        self.word_embeddings.build((None, None))
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(c.type_vocab_size, e), initializer=initializer(c)
        )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(c.max_position_embeddings, e),
            initializer=initializer(c),
        )
        self.layer_norm.build((None, None, e))
        if self.projection is not None:
            self.projection.build((None, None, e))
        self.built = True

    def call(self, input_ids, segment_ids, training=None):
        seq_len = ops.shape(input_ids)[1]
        x = self.word_embeddings(input_ids)
        x = x + ops.take(ops.cast(self.token_type_embeddings, x.dtype), segment_ids, axis=0)
        if keras.backend.backend() == "tensorflow" or isinstance(seq_len, int):
            positions = self.position_embeddings[:seq_len]
        else:  # a symbolic length (JAX's export): a slice would be [min(max_positions, t)]
            positions = ops.take(self.position_embeddings, ops.arange(seq_len), axis=0)
        positions = ops.cast(positions, x.dtype)
        x = x + positions[None, :, :]
        embedding_output = self.dropout(self.layer_norm(x), training=training)
        embedding_output = ops.cast(embedding_output, self.compute_dtype)
        hidden = embedding_output if self.projection is None else self.projection(embedding_output)
        return hidden, embedding_output

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}
