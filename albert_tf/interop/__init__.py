"""Any model file in, any format out: the format of an input detected and read (`model_files`),
written to another format, and `.keras` files loaded with every albert_tf class registered
(`keras_files`). The per-format mappings live one layer down, in `albert_tf.formats`."""
