"""The fine-tuning tasks, one folder each (data, task, metrics, export; each driver's flag checks
live in albert_tf.drivers); each plugs into albert_tf.engine through the task protocol
(engine/task.py). Their Keras models live in albert_tf/modeling/, where the weight formats can
reach them."""
