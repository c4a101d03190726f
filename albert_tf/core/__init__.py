"""The bottom layer every other folder builds on: the model config (`config`), the errors drivers
report as one line (`errors`) the file layer on `tf.io.gfile` (`fileio`) and
native code's stderr kept quiet (`native_stderr`)."""
