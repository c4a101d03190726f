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
    """The ALBERT encoder: factorized embedding → shared Transformer → pooler.

    Call on a dict of int32 [B,T] `input_ids`, `input_mask`, `segment_ids`; returns a dict with
    `sequence_output` [B,T,H], `pooled_output` [B,H], `encoder_outputs` (one [B,T,H] per block
    application) and `embedding_output` [B,T,E].
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
        if seq_len is not None and seq_len > self.config.max_position_embeddings:
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
        """The [V,E] word embedding layer (a ReversibleEmbedding)."""
        return self.embedding.word_embeddings


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(ConfigSerializable, ServingSignature, AlbertTaskModel):
    """ALBERT with its pretraining heads: masked-LM (tied decoder + own bias) and SOP.

    Inputs: those of AlbertModel plus int32 `masked_lm_positions` [B,P]. Outputs: those of
    AlbertModel plus float32 `mlm_logits` [B,P,V] and `sop_logits` [B,2]. Its loss is Google's
    MLM + SOP from the features `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`,
    so `compile(optimizer)` + `fit(dataset)` pretrain it; metrics are Google's eval metrics.
    """

    serving_features = ServingSignature.serving_features + ("masked_lm_positions",)

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
        """Google's eval metrics: weighted MLM accuracy and loss, SOP accuracy and loss."""
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
        """Google names of the head variables (`cls/predictions/...`,
        `cls/seq_relationship/...`)."""
        return {
            **mlm_head_variable_map(self.mlm_head),
            **pooled_head_variable_map(self.sop_head, "cls/seq_relationship"),
        }
