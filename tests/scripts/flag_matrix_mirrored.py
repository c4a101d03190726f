"""Every do_train/do_eval/do_predict combination of run_glue (CoLA, max_seq_length 64) under
MirroredStrategy over two logical CPUs with iterations_per_loop=2. The train+eval combination
cuts its batches to bucket lengths (16, 32, 48, 64) and its checkpoint is evaluated again at
fixed length; the others run at fixed length (one traced shape: each training run's traces are
most of the cost). Prints one JSON line {"combinations": {combination: sorted result keys},
"bucketed": the bucketed train+eval run's metrics, "fixed": the fixed-length evaluation's}."""

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

fixtures, strategy, task, config = setup("cola", 64)
out = {"combinations": {}}


def options(output_dir, bucket_by_length=False):
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
        bucket_by_length=bucket_by_length,
    )


# Train only first: its output_dir (object checkpoints, no model.ckpt-best) is where the
# combinations without --do_train evaluate / predict from, each on a copy of it.
trained = tempfile.mkdtemp()
order = sorted(
    (f for f in itertools.product([False, True], repeat=3) if any(f)),
    key=lambda f: f != (True, False, False),
)
for flags in order:
    bucketed = flags == (True, True, False)
    opts = options(trained if flags == (True, False, False) else tempfile.mkdtemp(), bucketed)
    if not flags[0]:
        shutil.rmtree(opts.output_dir)
        shutil.copytree(trained, opts.output_dir)
    results = run_glue(
        config, task, opts, strategy, do_train=flags[0], do_eval=flags[1], do_predict=flags[2]
    )
    out["combinations"]["".join("tep"[i] if f else "-" for i, f in enumerate(flags))] = sorted(
        results
    )
    if bucketed:  # it trained and evaluated bucketed; the same checkpoint, at fixed length
        out["bucketed"] = results
        fixed = options(opts.output_dir)
        out["fixed"] = run_glue(config, task, fixed, strategy, do_train=False, do_eval=True)
print(json.dumps(out))
