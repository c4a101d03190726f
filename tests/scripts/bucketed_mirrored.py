"""Bucketed training and evaluation of run_glue under MirroredStrategy over two
logical CPUs (iterations_per_loop=2, max_seq_length 64: buckets 16, 32, 48, 64); evaluates with and
without bucketing and prints one JSON line {"bucketed": metrics, "fixed": metrics}."""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mirrored_glue import setup  # noqa: E402  (two logical CPUs first)

from albert_tf.engine.finetuning_options import FineTuningOptions  # noqa: E402
from albert_tf.tasks.glue.task import run_glue  # noqa: E402

fixtures, strategy, task, config = setup("cola", 64)
out, results = tempfile.mkdtemp(), {}
for name, bucket in (("bucketed", True), ("fixed", False)):
    opts = FineTuningOptions(
        output_dir=out,
        init_checkpoint=f"{fixtures}/albert_tiny/model.ckpt-best",
        train_batch_size=8,
        eval_batch_size=8,
        predict_batch_size=8,
        train_step=2,
        warmup_step=1,
        save_checkpoints_steps=2,
        iterations_per_loop=2,
        learning_rate=1e-3,
        seed=3,
        verbose=0,
        bucket_by_length=bucket,
    )
    # the first run trains (bucketed) and evaluates; the second evaluates the same checkpoint
    results[name] = run_glue(config, task, opts, strategy, do_train=bucket, do_eval=True)
print(json.dumps(results))
