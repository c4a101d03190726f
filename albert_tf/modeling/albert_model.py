"""The ALBERT encoder model (`AlbertModel`) and the MLM + SOP pretrainer (`AlbertPretrainer`)."""

import keras
from keras import ops

from albert_tf.modeling.embedding import FactorizedEmbedding
from albert_tf.modeling.encoder import SharedEncoder
from albert_tf.modeling.heads import MaskedLMHead, PooledClassifierHead, Pooler
from albert_tf.modeling.losses import (
    masked_lm_example_loss,
    pretraining_loss,
    sentence_order_example_loss,
)
from albert_tf.modeling.model_base import (
    AlbertTaskModel,
    ConfigSerializable,
    ServingSignature,
    as_config,
    standardize_inputs,
)
from albert_tf.modeling.names import mlm_head_variable_map, pooled_head_variable_map


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertModel(ConfigSerializable, ServingSignature, keras.Model):
    """The ALBERT encoder: factorized embedding, shared Transformer layers and the pooler.

    The model has no task head; `AlbertPretrainer`, `AlbertClassifier` and the other task models
    wrap it as their `.albert`. Its variables are created when it is built, so Google's TF1
    checkpoints load at once with `albert_tf.load_original_checkpoint`, and its outputs match
    Google's code on the released checkpoints.

    Call it on a dict of int32 [batch, length] tensors: `input_ids`, and optionally `input_mask`
    (1 for real tokens, 0 for padding; default all ones) and `segment_ids` (default zeros;
    `token_type_ids` is accepted as another name), or on a bare `input_ids` tensor. It returns a
    dict with `sequence_output` [B, T, H], `pooled_output` [B, H] (tanh dense on the first
    token), `encoder_outputs` (a list with one [B, T, H] tensor per block application,
    `num_hidden_layers * inner_group_num` of them) and `embedding_output` [B, T, E] (before the
    projection to H).

    Args:
        config: `AlbertConfig`, or a dict of its fields in Google's key names. The model's
            hyperparameters.
        **kwargs: Keyword arguments for `keras.Model`, such as `name` (default "albert").

    Raises:
        TypeError: when `config` is neither an `AlbertConfig` nor a dict.
        ValueError: (on call) when the inputs have no `input_ids`, or are longer than the
            config's `max_position_embeddings`.

    Example:

    >>> import numpy as np, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> model = albert_tf.AlbertModel(config)
    >>> outputs = model({"input_ids": np.array([[2, 10, 11, 3, 0]]),
    ...                  "input_mask": np.array([[1, 1, 1, 1, 0]])})
    >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
    ((1, 5, 16), (1, 16))
    >>> len(outputs["encoder_outputs"]), tuple(outputs["embedding_output"].shape)
    (2, (1, 5, 8))

    Load a Google TF1 release (here the tiny test release that the repository ships) and check
    it against Google's own outputs on the same inputs:

    >>> path = "tests/data/fixtures/albert_tiny"
    >>> model = albert_tf.AlbertModel(
    ...     albert_tf.AlbertConfig.from_json_file(f"{path}/albert_config.json"))
    >>> report = albert_tf.load_original_checkpoint(model, f"{path}/model.ckpt-best")
    >>> report.missing
    []
    >>> google = np.load("tests/data/fixtures/albert_tiny_reference.npz")
    >>> outputs = model({k: google[k] for k in ("input_ids", "input_mask", "segment_ids")})
    >>> bool(np.abs(outputs["pooled_output"] - google["pooled_output"]).max() < 1e-5)
    True
    """

    def __init__(self, config, **kwargs):
        kwargs.setdefault("name", "albert")
        super().__init__(**kwargs)
        self.config = as_config(config)
        self.embedding = FactorizedEmbedding(self.config, name="embeddings")
        self.encoder = SharedEncoder(self.config, name="encoder")
        self.pooler = Pooler(self.config, name="pooler")
        self.embedding.build()
        self.encoder.build()
        self.pooler.build()
        self.built = True

    def call(self, inputs, training=None):
        input_ids, input_mask, segment_ids = standardize_inputs(inputs)
        seq_len = input_ids.shape[1]
        # a static length only (JAX's export traces symbolic lengths, which cannot be compared)
        if isinstance(seq_len, int) and seq_len > self.config.max_position_embeddings:
            raise ValueError(
                f"sequence length {seq_len} exceeds max_position_embeddings "
                f"{self.config.max_position_embeddings} of the ALBERT config"
            )
        hidden, embedding_output = self.embedding(input_ids, segment_ids, training=training)
        encoder_outputs = self.encoder(hidden, input_mask, training=training)
        sequence_output = encoder_outputs[-1]
        return {
            "sequence_output": sequence_output,
            "pooled_output": self.pooler(sequence_output),
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output,
        }

    @property
    def word_embeddings(self):
        """The word embedding layer: a `keras.layers.ReversibleEmbedding` with a [V, E] table.

        The masked-LM head of `AlbertPretrainer` decodes with this same table (tied weights).
        """
        return self.embedding.word_embeddings


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(ConfigSerializable, ServingSignature, AlbertTaskModel):
    """ALBERT with its two pretraining heads: masked language model (MLM) and sentence order.

    The MLM head (dense, activation, LayerNorm) decodes with the encoder's word embedding table
    (tied weights) plus its own output bias; the sentence-order prediction (SOP) head is a
    2-way classifier on the pooled output. Head variables carry Google's names
    (`cls/predictions/...`, `cls/seq_relationship/...`), so a released checkpoint loads with
    its heads.

    Inputs: those of `AlbertModel` plus int32 `masked_lm_positions` [B, P], the positions to
    predict. Outputs: those of `AlbertModel` plus float32 `mlm_logits` [B, P, V] and
    `sop_logits` [B, 2].

    The model carries its own loss, Google's MLM + SOP loss, computed from the features
    `masked_lm_ids` [B, P], `masked_lm_weights` [B, P] (0 for padded slots) and
    `next_sentence_labels` [B, 1] (0: in order, 1: swapped) of the input dict, so
    `compile(optimizer)` and `fit(features)` pretrain it with no `loss=` or `y`. Its metrics
    are Google's eval metrics: `masked_lm_accuracy`, `masked_lm_loss`,
    `sentence_order_accuracy` and `sentence_order_loss`.

    Args:
        config: `AlbertConfig`, or a dict of its fields in Google's key names. The model's
            hyperparameters.
        **kwargs: Keyword arguments for `keras.Model`, such as `name` (default
            "albert_pretrainer").

    Raises:
        TypeError: when `config` is neither an `AlbertConfig` nor a dict.
        ValueError: (on call) when the inputs have no `masked_lm_positions`.

    Example:

    >>> import numpy as np, albert_tf
    >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
    ...                                 num_hidden_layers=2, num_attention_heads=2,
    ...                                 intermediate_size=32)
    >>> model = albert_tf.AlbertPretrainer(config)
    >>> features = {"input_ids": np.array([[2, 10, 4, 3], [2, 12, 4, 3]]),
    ...             "masked_lm_positions": np.array([[2], [2]])}
    >>> outputs = model(features)
    >>> tuple(outputs["mlm_logits"].shape), tuple(outputs["sop_logits"].shape)
    ((2, 1, 100), (2, 2))

    Train it on feature dicts in Google's record names:

    >>> features.update(masked_lm_ids=np.array([[11], [13]]),
    ...                 masked_lm_weights=np.array([[1.0], [1.0]]),
    ...                 next_sentence_labels=np.array([[0], [1]]))
    >>> model.compile(optimizer=albert_tf.LAMB(learning_rate=1e-3))
    >>> history = model.fit(features, batch_size=2, epochs=1, verbose=0)
    >>> sorted(history.history)
    ['loss', 'masked_lm_accuracy', 'masked_lm_loss', 'sentence_order_accuracy',
     'sentence_order_loss']
    """

    serving_features = ServingSignature.serving_features + ("masked_lm_positions",)
    serving_lengths = {"masked_lm_positions": "p"}

    def __init__(self, config, **kwargs):
        kwargs.setdefault("name", "albert_pretrainer")
        super().__init__(**kwargs)
        self.config = as_config(config)
        self.albert = AlbertModel(self.config)
        self.mlm_head = MaskedLMHead(self.config, self.albert.word_embeddings, name="predictions")
        self.sop_head = PooledClassifierHead(self.config, 2, name="seq_relationship")
        self.mlm_head.build()
        self.sop_head.build()
        self.masked_lm_accuracy = keras.metrics.Mean(name="masked_lm_accuracy")
        self.masked_lm_mean_loss = keras.metrics.Mean(name="masked_lm_loss")
        self.sentence_order_accuracy = keras.metrics.Mean(name="sentence_order_accuracy")
        self.sentence_order_mean_loss = keras.metrics.Mean(name="sentence_order_loss")
        self.built = True

    def task_loss(self, features, labels, outputs):
        total, _, _ = pretraining_loss(outputs, features)
        return total

    def update_task_metrics(self, features, labels, outputs):
        """Updates Google's eval metrics: weighted MLM accuracy and loss, SOP accuracy and loss.

        Args:
            features: dict. The batch's features, with `masked_lm_ids`, `masked_lm_weights` and
                `next_sentence_labels`.
            labels: Unused (the labels are features).
            outputs: dict. The model's outputs for the batch.
        """
        weights = ops.cast(features["masked_lm_weights"], "float32")
        ids = ops.cast(features["masked_lm_ids"], "int32")
        mlm_pred = ops.cast(ops.argmax(outputs["mlm_logits"], axis=-1), "int32")
        self.masked_lm_accuracy.update_state(ops.cast(ops.equal(mlm_pred, ids), "float32"), weights)
        self.masked_lm_mean_loss.update_state(
            masked_lm_example_loss(outputs["mlm_logits"], ids), weights
        )
        sop_labels = ops.reshape(ops.cast(features["next_sentence_labels"], "int32"), (-1,))
        sop_pred = ops.cast(ops.argmax(outputs["sop_logits"], axis=-1), "int32")
        self.sentence_order_accuracy.update_state(
            ops.cast(ops.equal(sop_pred, sop_labels), "float32")
        )
        self.sentence_order_mean_loss.update_state(
            sentence_order_example_loss(outputs["sop_logits"], sop_labels)
        )

    def call(self, inputs, training=None):
        if "masked_lm_positions" not in inputs:
            raise ValueError("AlbertPretrainer inputs need 'masked_lm_positions' [batch, P]")
        outputs = dict(self.albert(inputs, training=training))
        outputs["mlm_logits"] = self.mlm_head(
            outputs["sequence_output"], inputs["masked_lm_positions"]
        )
        outputs["sop_logits"] = self.sop_head(outputs["pooled_output"])
        return outputs

    def original_head_variables(self):
        """The head variables by their names in Google's checkpoints.

        Returns:
            dict: Google name (`cls/predictions/...`, `cls/seq_relationship/...`) to variable.
        """
        return {
            **mlm_head_variable_map(self.mlm_head),
            **pooled_head_variable_map(self.sop_head, "cls/seq_relationship"),
        }
