"""The bases every albert_tf Keras model shares: `AlbertTaskModel` (a model that carries its own
loss and metrics, so `compile(optimizer)` + `fit(dataset)` work), Keras (de)serialisation from an
AlbertConfig, the standard int32 inputs, and `export` with a signature of int32 features."""

import keras
from keras import ops
import tensorflow as tf

from albert_tf.core.config import AlbertConfig
from albert_tf.core.environment import check_backend_runs


class AlbertTaskModel(keras.Model):
    """A Keras model that carries its own loss and metrics, so `compile(optimizer)` + `fit` work.

    Subclasses define `task_loss(features, labels, outputs)`, which returns this replica's
    share of the global loss (see `modeling.losses.replica_mean`), and may define
    `update_task_metrics(...)`. Labels come from `y` when `fit` is given `(x, y)`, else from the
    feature dict (Google's record names, such as `label_ids`). Compiling with an explicit
    `loss=` uses that loss and the compiled metrics instead.
    """

    def task_loss(self, features, labels, outputs):
        """The model's loss on one batch (subclasses define it).

        Args:
            features: dict. The batch's input features.
            labels: The `y` given to `fit`, or None (then the labels are features).
            outputs: dict. The model's outputs for the batch.

        Returns:
            A float32 scalar: this replica's share of the global-batch loss.

        Raises:
            NotImplementedError: always, in this base class.
        """
        raise NotImplementedError

    def update_task_metrics(self, features, labels, outputs):
        """Updates the model's own `keras.metrics` on one batch; by default, none.

        Args:
            features: dict. The batch's input features.
            labels: The `y` given to `fit`, or None (then the labels are features).
            outputs: dict. The model's outputs for the batch.
        """

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras's loss hook: `task_loss` plus the layers' added losses.

        With a loss given to `compile`, Keras's own computation is used instead.

        Args:
            x: dict. The batch's input features.
            y: The labels given to `fit`, or None.
            y_pred: dict. The model's outputs.
            sample_weight: Used only with a compiled loss.
            training: Whether the loss is for a training step.

        Returns:
            A float32 scalar: the loss.
        """
        if self._compile_loss is not None:  # the user compiled with an explicit loss
            return super().compute_loss(x, y, y_pred, sample_weight, training=training)
        loss = self.task_loss(x, y, y_pred)
        if self.losses:
            loss = loss + keras.ops.sum(self.losses)
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras's metrics hook: `update_task_metrics`, then the compiled metrics.

        Args:
            x: dict. The batch's input features.
            y: The labels given to `fit`, or None.
            y_pred: dict. The model's outputs.
            sample_weight: Passed to the compiled metrics.

        Returns:
            dict: metric name to its current value.
        """
        if self._compile_loss is None:
            self.update_task_metrics(x, y, y_pred)
        results = super().compute_metrics(x, y, y_pred, sample_weight)
        if keras.backend.backend() == "tensorflow" and isinstance(
            tf.distribute.get_strategy(), tf.distribute.MultiWorkerMirroredStrategy
        ):
            # Keras reduces step outputs across workers with reduce("MEAN", axis=0), which
            # rejects scalars; a [1] tensor reduces to the same scalar.
            results = {k: tf.reshape(v, [1]) for k, v in results.items()}
        return results

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        """Keras reduces the first distributed batch across replicas only to learn its shapes,
        which fails under MultiWorkerMirroredStrategy (nested structures); one replica's local
        value carries the same shapes, so use it. (A hook of the TensorFlow trainer only.)"""
        strategy = self._distribute_strategy
        if strategy is None or iterator is None:
            return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
        for _, _, it in iterator:
            data_batch = next(it)
            break
        local = lambda v: (
            strategy.experimental_local_results(v)[0]
            if isinstance(v, tf.distribute.DistributedValues)
            else v
        )
        data_batch = tf.nest.map_structure(local, data_batch)
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)


def as_config(config):
    """`config` as an AlbertConfig (an AlbertConfig, or a dict of its fields)."""
    if isinstance(config, AlbertConfig):
        return config
    if isinstance(config, dict):
        return AlbertConfig.from_dict(config)
    raise TypeError(f"expected an AlbertConfig or a dict, got {type(config).__name__}")


def standardize_inputs(inputs):
    """A dict of int32 input_ids / input_mask / segment_ids (mask defaults to ones, segments to
    zeros; `token_type_ids` accepted for segment_ids), or a bare input_ids tensor."""
    if not isinstance(inputs, dict):
        inputs = {"input_ids": inputs}
    if "input_ids" not in inputs:
        raise ValueError(f"ALBERT inputs need 'input_ids'; got keys {sorted(inputs)}")
    input_ids = ops.cast(inputs["input_ids"], "int32")
    mask = inputs.get("input_mask")
    segments = inputs.get("segment_ids", inputs.get("token_type_ids"))
    mask = ops.ones_like(input_ids) if mask is None else ops.cast(mask, "int32")
    segments = ops.zeros_like(input_ids) if segments is None else ops.cast(segments, "int32")
    return input_ids, mask, segments


class ConfigSerializable:
    """Keras (de)serialisation for models built from an AlbertConfig plus a few arguments
    (named by `config_args`), so `.keras` files round-trip."""

    config_args = ()

    def get_config(self):
        extra = {name: getattr(self, name) for name in self.config_args}
        return {"config": self.config.to_dict(), "name": self.name, **extra}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def flat_outputs(outputs):
    """The model's output dict with each list of tensors spread to `name_0`, `name_1`...
    (SavedModel and LiteRT signatures take only a flat dict of tensors)."""
    flat = {}
    for name, value in outputs.items():
        if isinstance(value, (list, tuple)):
            flat.update({f"{name}_{i}": v for i, v in enumerate(value)})
        else:
            flat[name] = value
    return flat


class ServingModel(keras.Model):
    """What `export` writes: the wrapped model's call, outputs flattened by `flat_outputs`."""

    def __init__(self, model):
        super().__init__(name=f"{model.name}_serving")
        self.model = model
        self.built = True

    def call(self, inputs, training=None):
        outputs = self.model(inputs, training=training)
        extra = getattr(self.model, "serving_outputs", None)
        return flat_outputs(extra(outputs) if extra is not None else outputs)


class ServingSignature:
    """`model.export(path)` (SavedModel or LiteRT) with no hand-written input_signature.

    The models create their variables in `__init__` (so checkpoints load, weights count and
    variables are placed under a strategy scope before any call), so Keras never records the
    input shapes it would infer a signature from, and would guess float inputs anyway. Each
    model names its int32 [batch, length] features in `serving_features` instead.
    """

    serving_features = ("input_ids", "input_mask", "segment_ids")
    serving_lengths = {}  # a feature whose length is not the sequence's: name -> its symbol

    def serving_polymorphic_shapes(self):
        """The symbolic shapes of the serving features, for JAX's export (`jax2tf`): every
        feature `(b, t)` (one batch, one sequence length) unless `serving_lengths` names its own.

        Returns:
            list: one dict, feature name to its shape as jax2tf spells it.
        """
        return [
            {name: f"(b, {self.serving_lengths.get(name, 't')})" for name in self.serving_features}
        ]

    def serving_constraints(self):
        """What JAX's export may assume of the symbolic lengths (jax2tf's
        `polymorphic_constraints`); none by default.

        Returns:
            tuple of str, such as `("t >= 5",)`.
        """
        return ()

    def serving_input_signature(self):
        """The input signature that `export` uses by default.

        Returns:
            list: one positional argument, a dict of int32 `tf.TensorSpec([None, None])`, one
            per name in `serving_features`.
        """
        return [
            {
                name: tf.TensorSpec([None, None], tf.int32, name=name)
                for name in self.serving_features
            }
        ]

    def export(
        self, filepath, format="tf_saved_model", verbose=None, input_signature=None, **kwargs
    ):
        """Exports the model for inference (a SavedModel, or a LiteRT file).

        The same as `keras.Model.export`, but the outputs are flattened (a list output such as
        `encoder_outputs` becomes `encoder_outputs_0`, `encoder_outputs_1`, ...: serving
        signatures take only a flat dict of tensors), and the default input signature is the
        model's int32 [batch, length] features (`serving_input_signature()`), which Keras
        could not infer since the variables are created before any call.

        Args:
            filepath: str or pathlib.Path. Where to write the artifact.
            format: str. "tf_saved_model" (default) or another format `keras.Model.export`
                supports, such as "litert".
            verbose: bool or None. Whether to print a message while exporting.
            input_signature: The input specs; default `serving_input_signature()`.
            **kwargs: Passed on to `keras.Model.export`.

        Returns:
            What `keras.Model.export` returns (None for a SavedModel).

        Raises:
            ValueError: on KERAS_BACKEND=torch, which runs the models' forward pass only.

        Example:

        >>> import tempfile
        >>> import tensorflow as tf, albert_tf
        >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
        ...                                 num_hidden_layers=2, num_attention_heads=2,
        ...                                 intermediate_size=32)
        >>> model = albert_tf.AlbertClassifier(config, num_labels=2)
        >>> path = tempfile.mkdtemp() + "/saved_model"
        >>> model.export(path, verbose=False)
        >>> ones = tf.ones([1, 4], tf.int32)
        >>> loaded = tf.saved_model.load(path)  # keep a reference while calling it
        >>> outputs = loaded.serve({"input_ids": ones, "input_mask": ones, "segment_ids": 0 * ones})
        >>> sorted(outputs), tuple(outputs["probabilities"].shape)
        (['logits', 'probabilities'], (1, 2))
        """
        check_backend_runs(f"export(format={format!r})")
        if input_signature is None:
            input_signature = self.serving_input_signature()
            if keras.backend.backend() == "jax" and format == "tf_saved_model":
                # Keras gives each unknown dimension its own symbol; ours share b and t
                jax2tf_kwargs = kwargs.setdefault("jax2tf_kwargs", {})
                jax2tf_kwargs.setdefault("polymorphic_shapes", self.serving_polymorphic_shapes())
                jax2tf_kwargs.setdefault("polymorphic_constraints", self.serving_constraints())
                jax2tf_kwargs.setdefault("with_gradient", False)  # a serving graph
        return keras.Model.export(
            ServingModel(self),
            filepath,
            format=format,
            verbose=verbose,
            input_signature=input_signature,
            **kwargs,
        )
