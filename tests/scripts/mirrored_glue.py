"""Shared setup of the mirrored GLUE scripts: two logical CPUs (before any other TF op), a
MirroredStrategy over them, a GLUE task of the test data and the tiny release config."""

import sys
import tempfile

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from albert_tf import AlbertConfig  # noqa: E402
from albert_tf.engine.distribute import get_strategy  # noqa: E402
from albert_tf.tasks.glue.task import GlueTask  # noqa: E402
from albert_tf.text.encoding import TextEncoder  # noqa: E402


def setup(task_name: str, max_seq_length: int):
    """(fixtures folder, strategy, task, config) from the script's argv (fixtures, data)."""
    fixtures, data = sys.argv[1], sys.argv[2]
    strategy = get_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])
    encoder = TextEncoder.from_files(f"{fixtures}/spm.model", do_lower_case=True)
    task = GlueTask(task_name, data, encoder, max_seq_length, tempfile.mkdtemp())
    config = AlbertConfig.from_json_file(f"{fixtures}/albert_tiny/albert_config.json")
    return fixtures, strategy, task, config
