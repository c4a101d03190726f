"""The cross-layer parameter-sharing encoder (paper §3.1), with Google's groups and inner groups."""

import keras

from albert_tf.modeling.padding_free import TokenRows, in_xla_context
from albert_tf.modeling.recompute import recomputed_layers
from albert_tf.modeling.transformer import (
    AttentionSublayer,
    FeedForwardSublayer,
    TransformerBlock,
    attention_mask_adder,
)


class SharedEncoder(keras.layers.Layer):
    """Creates each distinct sublayer once and reuses it across layers.

    Layer i runs inner_group_num blocks. Its attention sublayers are those of group
    `int(i / L * num_hidden_groups)` when attention is shared (sharing "all" or "attention"),
    else its own (stored as group i); likewise the feed-forward sublayers ("all" or "ffn").
    `sublayers["attention"][(index, k)]` is the sublayer Google names group_<index>/inner_group_<k>.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.padding_free = False  # see padding_free.py; set_padding_free() switches it
        share_attention = config.sharing in ("all", "attention")
        share_ffn = config.sharing in ("all", "ffn")
        layers = range(config.num_hidden_layers)
        inner = range(config.inner_group_num)
        self._attention_index = [config.group_of_layer(i) if share_attention else i for i in layers]
        self._ffn_index = [config.group_of_layer(i) if share_ffn else i for i in layers]
        # Tracked flat lists (Keras tracks lists of layers); the dicts below only index them.
        self.attention_sublayers = [
            AttentionSublayer(config, name=f"attention_group_{g}_inner_{k}")
            for g in sorted(set(self._attention_index))
            for k in inner
        ]
        self.ffn_sublayers = [
            FeedForwardSublayer(config, name=f"ffn_group_{g}_inner_{k}")
            for g in sorted(set(self._ffn_index))
            for k in inner
        ]
        # Keras tracks these lists for its weights, but a list is no tf.train.Checkpoint
        # dependency: name each sublayer one, or object checkpoints lose the Transformer.
        # (Only TensorFlow's layers are trackables; other backends checkpoint by Keras's paths.)
        if keras.backend.backend() == "tensorflow":
            for layer in self.attention_sublayers + self.ffn_sublayers:
                self._track_trackable(layer, name=layer.name)
        att_keys = [(g, k) for g in sorted(set(self._attention_index)) for k in inner]
        ffn_keys = [(g, k) for g in sorted(set(self._ffn_index)) for k in inner]
        self._by_key = {
            "attention": dict(zip(att_keys, self.attention_sublayers)),
            "ffn": dict(zip(ffn_keys, self.ffn_sublayers)),
        }
        self._blocks = [
            [
                TransformerBlock(
                    self._by_key["attention"][(self._attention_index[i], k)],
                    self._by_key["ffn"][(self._ffn_index[i], k)],
                )
                for k in inner
            ]
            for i in layers
        ]

    @property
    def sublayers(self):
        """{"attention": {(group, inner): layer}, "ffn": {...}} — the converter's view."""
        return self._by_key

    @property
    def blocks(self):
        """Every block application in order (L × inner_group_num TransformerBlocks; a shared
        sublayer appears once per application), for code that runs the blocks itself."""
        return [block for layer_blocks in self._blocks for block in layer_blocks]

    def build(self, input_shape=None):
        for layer in self.attention_sublayers + self.ffn_sublayers:
            layer.build((None, None, self.config.hidden_size))
        self.built = True

    def call(self, hidden, input_mask, training=None):
        """Returns the list of every block application's output (L × inner_group_num tensors)."""
        adder = attention_mask_adder(input_mask, "float32")
        blocks = self.blocks
        rows = (
            TokenRows(input_mask, differentiable=bool(training))
            if self.padding_free and not in_xla_context()
            else None
        )
        if rows is not None:
            hidden = rows.pack_sequence(hidden)
        if training and self.config.recompute_grad:  # see albert_tf/modeling/recompute.py
            outputs = recomputed_layers(blocks, hidden, adder, rows)
        else:
            outputs = []
            for block in blocks:
                hidden = block(hidden, adder, training=training, rows=rows)
                outputs.append(hidden)
        return outputs if rows is None else [rows.unpack_sequence(o) for o in outputs]

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}
