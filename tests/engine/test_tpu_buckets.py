"""On TPU every sequence shape is one XLA compile: with tpu_buckets (--use_tpu or
--strategy_type=tpu) a bucketed training run feeds its compiled step at most 3 shapes."""

import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.engine import bucketing, finetuning
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.tasks.glue.task import GlueTask, run_glue
from albert_tf.text.encoding import TextEncoder


def test_tpu_bucket_lengths():
    assert bucketing.tpu_bucket_lengths(512) == (128, 256, 512)
    assert bucketing.tpu_bucket_lengths(128) == (32, 64, 128)
    assert bucketing.tpu_bucket_lengths(32) == (16, 32)
    assert bucketing.tpu_bucket_lengths(16) == (16,)
    assert len(bucketing.bucket_lengths(512)) == 10


def _shapes_fed(fixtures_dir, data_dir, tmp_path, monkeypatch, tpu_buckets):
    """Distinct input_ids shapes the training pipeline hands the compiled step (each one an
    XLA compile on a TPU), over 12 steps of a real run (max_seq_length 64: the fixture's
    max_position_embeddings). The pipeline's shapes do not depend on jit_compile (only
    tpu_buckets picks the buckets), so the run traces without XLA: a TensorFlow trace per
    shape costs far less than an XLA compile per shape on CPU."""
    seen = set()
    original = finetuning.records_dataset

    def spy(*args, **kwargs):
        ds = original(*args, **kwargs)
        if not (args[3] if len(args) > 3 else kwargs.get("is_training")):
            return ds

        def note(batch):
            tf.py_function(lambda s: seen.add(tuple(s.numpy())), [tf.shape(batch["input_ids"])], [])
            return batch

        return ds.map(note)

    encoder = TextEncoder.from_files(str(fixtures_dir / "spm.model"), do_lower_case=True)
    task = GlueTask("cola", str(data_dir), encoder, 64, str(tmp_path / "cache"))
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    opts = FineTuningOptions(
        output_dir=str(tmp_path / f"out-{tpu_buckets}"),
        train_batch_size=4,
        train_step=12,
        warmup_step=1,
        save_checkpoints_steps=12,
        learning_rate=1e-3,
        seed=3,
        verbose=0,
        init_checkpoint=str(fixtures_dir / "albert_tiny" / "model.ckpt-best"),
        jit_compile=False,
        tpu_buckets=tpu_buckets,
    )
    with monkeypatch.context() as patch:  # undone before the next run: spies never chain
        patch.setattr(finetuning, "records_dataset", spy)
        run_glue(config, task, opts, do_train=True)
    assert tf.train.latest_checkpoint(opts.output_dir).endswith("ckpt-12")
    return seen


def test_tpu_buckets_bound_the_shapes_a_compiled_training_run_sees(
    fixtures_dir, data_dir, tmp_path, monkeypatch
):
    few = _shapes_fed(fixtures_dir, data_dir, tmp_path, monkeypatch, True)
    fine = _shapes_fed(fixtures_dir, data_dir, tmp_path, monkeypatch, False)
    assert {s[1] for s in few} <= {16, 32, 64} and 1 <= len(few) <= 3, few
    assert {s[1] for s in fine} <= set(bucketing.bucket_lengths(64)), fine
    assert len(fine) > len(few) or {s[1] for s in fine} - {16, 32, 64}, (fine, few)
