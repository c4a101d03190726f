"""AlbertTaskModel: a Keras model that carries its own loss and metrics.

So `model.compile(optimizer)` + `model.fit(dataset_of_feature_dicts)` work in a notebook, and the
training engine drives every task (pretraining, GLUE, SQuAD, RACE) the same way.
"""
import keras
import tensorflow as tf


class AlbertTaskModel(keras.Model):
    """Subclasses define `task_loss(features, labels, outputs)` (the replica's share of the
    global loss, see modeling.losses.replica_mean) and `update_task_metrics(...)`. Labels come from
    `y` when fit is given (x, y), else from the feature dict (Google's record names)."""

    def task_loss(self, features, labels, outputs):
        raise NotImplementedError

    def update_task_metrics(self, features, labels, outputs):
        """Update the model's own keras.metrics; default: none."""

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self._compile_loss is not None:  # the user compiled with an explicit loss
            return super().compute_loss(x, y, y_pred, sample_weight, training=training)
        loss = self.task_loss(x, y, y_pred)
        if self.losses:
            loss = loss + keras.ops.sum(self.losses)
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        if self._compile_loss is None:
            self.update_task_metrics(x, y, y_pred)
        results = super().compute_metrics(x, y, y_pred, sample_weight)
        if isinstance(tf.distribute.get_strategy(), tf.distribute.MultiWorkerMirroredStrategy):
            # Keras reduces step outputs across workers with reduce("MEAN", axis=0), which
            # rejects scalars; a [1] tensor reduces to the same scalar.
            results = {k: tf.reshape(v, [1]) for k, v in results.items()}
        return results

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        """Keras reduces the first distributed batch across replicas only to learn its shapes,
        which fails under MultiWorkerMirroredStrategy (nested structures); one replica's local
        value carries the same shapes, so use it."""
        strategy = self._distribute_strategy
        if strategy is None or iterator is None:
            return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
        for _, _, it in iterator:
            data_batch = next(it)
            break
        local = lambda v: (strategy.experimental_local_results(v)[0]
                           if isinstance(v, tf.distribute.DistributedValues) else v)
        data_batch = tf.nest.map_structure(local, data_batch)
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)
