"""Train a few pretraining steps on one device and on MirroredStrategy over two logical CPUs at
the same global batch; print the losses and the largest weight difference as JSON."""

import json
import sys
import tempfile

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import numpy as np  # noqa: E402

from albert_tf import AlbertConfig  # noqa: E402
from albert_tf.engine.distribute import get_strategy  # noqa: E402
from albert_tf.pretraining.pretrain import PretrainingOptions, pretrain  # noqa: E402

fixtures = sys.argv[1]
optimizer = sys.argv[2] if len(sys.argv) > 2 else "lamb"
config = AlbertConfig.from_json_file(f"{fixtures}/albert_tiny/albert_config.json")
results = {}
for name, strategy in (
    ("one", get_strategy("one_device")),
    ("mirrored", get_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])),
):
    opts = PretrainingOptions(
        input_file=f"{fixtures}/pretraining.tfrecord",
        output_dir=tempfile.mkdtemp(),
        init_checkpoint=f"{fixtures}/albert_tiny/model.ckpt-best",
        max_seq_length=64,
        max_predictions_per_seq=10,
        train_batch_size=16,
        eval_batch_size=16,
        num_train_steps=3,
        num_warmup_steps=1,
        save_checkpoints_steps=3,
        iterations_per_loop=1,
        max_eval_steps=2,
        learning_rate=1e-3,
        optimizer=optimizer,
        seed=7,
        verbose=0,
        do_eval=True,
    )
    out = pretrain(config, opts, strategy)
    from albert_tf.formats.tf1 import load_original_checkpoint
    from albert_tf.modeling.albert_model import AlbertPretrainer

    model = AlbertPretrainer(config)
    load_original_checkpoint(model, f"{opts.output_dir}/model.ckpt-best")
    results[name] = {"eval": out, "weights": [np.asarray(w) for w in model.weights]}
diff = max(
    float(np.max(np.abs(a - b)))
    for a, b in zip(results["one"]["weights"], results["mirrored"]["weights"])
)
moved = max(float(np.max(np.abs(a))) for a in results["one"]["weights"])
print(
    json.dumps(
        {
            "max_weight_diff": diff,
            "one": results["one"]["eval"],
            "mirrored": results["mirrored"]["eval"],
            "replicas": 2,
        }
    )
)
