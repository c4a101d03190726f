"""Model files in any format: detect an input's format and read it (`model_files`), write a
model in another format, and load `.keras` files with every albert_tf class registered
(`keras_files`). The mapping of each format lives one layer down, in `albert_tf.formats`."""
