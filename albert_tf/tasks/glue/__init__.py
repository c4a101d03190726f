"""GLUE sentence(-pair) classification and regression on the generic classifier
(tasks.classification): GLUE's processors, metrics, submission files and task."""
