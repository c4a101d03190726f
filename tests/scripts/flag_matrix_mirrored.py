"""Every do_train/do_eval/do_predict combination of run_glue under MirroredStrategy over two
logical CPUs with iterations_per_loop=2; prints one JSON line {combination: sorted result keys}."""

import itertools
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mirrored_glue import setup  # noqa: E402  (two logical CPUs first)

from albert_tf.engine.finetuning_options import FineTuningOptions  # noqa: E402
from albert_tf.tasks.glue.task import run_glue  # noqa: E402

fixtures, strategy, task, config = setup("mrpc", 32)
out = {}


def options(output_dir):
    return FineTuningOptions(
        output_dir=output_dir,
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
        bucket_by_length=False,
    )


# Train only first: its output_dir (object checkpoints, no model.ckpt-best) is where the
# combinations without --do_train evaluate / predict from, each on a copy of it.
trained = tempfile.mkdtemp()
order = sorted(
    (f for f in itertools.product([False, True], repeat=3) if any(f)),
    key=lambda f: f != (True, False, False),
)
for flags in order:
    opts = options(trained if flags == (True, False, False) else tempfile.mkdtemp())
    if not flags[0]:
        shutil.rmtree(opts.output_dir)
        shutil.copytree(trained, opts.output_dir)
    results = run_glue(
        config, task, opts, strategy, do_train=flags[0], do_eval=flags[1], do_predict=flags[2]
    )
    out["".join("tep"[i] if f else "-" for i, f in enumerate(flags))] = sorted(results)
print(json.dumps(out))
