"""The distribution settings the engine offers (`distribute.get_strategy`, `set_precision`):
strategies, compute precisions and how long to wait for a TPU. Importing it loads no
TensorFlow, so the drivers' flags can name the choices before TensorFlow loads."""

TPU_CONNECT_SECONDS = 300.0  # how long a driver waits for a TPU to answer before giving up

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")
DTYPES = ("float32", "bfloat16", "float16")
