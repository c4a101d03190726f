"""GLUE sentence(-pair) classification and regression: processors, records, task, metrics,
serving."""
