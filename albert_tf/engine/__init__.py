"""The one training engine and what every task shares: the fit loop with checkpoints and
evaluation, tf.distribute, the optimizers, TFRecord caches, the fine-tuning flow and flags."""
