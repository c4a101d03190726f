"""The fine-tuning tasks, one folder each (data, model head, task, metrics, export); they plug
into albert_tf.engine through the task protocol."""
