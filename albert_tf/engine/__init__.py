"""The one training engine and what every task shares: the fit loop with checkpoints and
evaluation, tf.distribute, the optimizers, TFRecord caches and the fine-tuning flow
(the drivers' flags and checks live in albert_tf.drivers)."""
