"""AlbertTaskModel: a Keras model that carries its own loss and metrics.

So `model.compile(optimizer)` + `model.fit(dataset_of_feature_dicts)` work in a notebook, and the
training engine drives every task (pretraining, GLUE, SQuAD, RACE) the same way.
"""
import keras


class AlbertTaskModel(keras.Model):
    """Subclasses define `task_loss(features, labels, outputs)` (the replica's share of the
    global loss, see distribute.replica_mean) and `update_task_metrics(...)`. Labels come from
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
        return super().compute_metrics(x, y, y_pred, sample_weight)
