"""Length bucketing of training batches: fixed batch size, shapes from the fixed bucket set, no
real token cut, every record once per window, and an order that is a pure function of
(seed, position) so resuming by skipping batches is exact."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.engine import bucketing
from albert_tf.engine.finetuning import bucket_by_length, predict_records, records_dataset
from albert_tf.engine.records import decode, write_records

L = 128
SPEC = {
    "input_ids": ("int64", L),
    "input_mask": ("int64", L),
    "uid": ("int64", 1),
    "length": ("int64", 1),
}


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """300 records of random lengths 3..L; uid is the record's index."""
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("bucketing") / "train.tf_record"
    rows = []
    for i in range(300):
        n = int(rng.integers(3, L + 1))
        ids = np.zeros(L, np.int64)
        ids[:n] = rng.integers(5, 30, n)
        rows.append(
            {"input_ids": ids, "input_mask": (ids > 0).astype(np.int64), "uid": i, "length": n}
        )
    write_records(path, rows, SPEC)
    return str(path)


def _batches(path, n, seed=7, ctx=None, batch=4):
    ds = records_dataset(path, SPEC, batch, True, seed=seed, input_context=ctx, seq_length=L)
    return [{k: v.numpy() for k, v in b.items()} for b in ds.take(n)]


def test_bucket_lengths_are_a_fixed_set():
    assert bucketing.bucket_lengths(512) == (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)
    assert bucketing.bucket_lengths(384) == (16, 32, 48, 64, 96, 128, 192, 256, 384)
    assert bucketing.bucket_lengths(128) == (16, 32, 48, 64, 96, 128)
    assert bucketing.bucket_lengths(100) == (16, 32, 48, 64, 96, 100)
    assert bucketing.bucket_lengths(1024)[-3:] == (512, 768, 1024)
    assert bucketing.bucket_lengths(24) == (16, 24)
    assert bucketing.bucket_lengths(16) == (16,)  # one bucket: nothing is cut
    assert bucketing.bucket_lengths(10) == (10,)
    assert bucketing.bucket_lengths(512, smallest=32) == (32, 64, 96, 128, 192, 256, 384, 512)
    ladder = bucketing.bucket_lengths(4096)
    assert all(b % 16 == 0 for b in ladder)
    assert all(b <= 1.5 * a for a, b in zip(ladder[1:], ladder[2:]))  # ≤1.5x padding waste


def test_training_batches_keep_the_batch_size_and_every_token(records):
    seen, buckets = set(), bucketing.bucket_lengths(L)
    for b in _batches(records, 48):
        width = b["input_ids"].shape[1]
        assert b["input_ids"].shape[0] == 4 and b["uid"].shape == (4, 1)
        assert width in buckets and b["input_mask"].shape == (4, width)
        np.testing.assert_array_equal(b["input_mask"].sum(1), b["length"][:, 0])  # none cut
        below = buckets.index(width)
        assert b["length"].max() > (buckets[below - 1] if below else 0)  # the smallest that fits
        seen.add(width)
    assert len(seen) >= 3  # the data spans several buckets


def test_training_order_is_deterministic_and_a_window_uses_each_record_once(records):
    first, again = _batches(records, 40), _batches(records, 40)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a["uid"], b["uid"])
    window = np.concatenate([b["uid"][:, 0] for b in first[: bucketing.WINDOW_BATCHES]])
    assert len(set(window)) == len(window) == bucketing.WINDOW_BATCHES * 4
    other = _batches(records, 16, seed=8)
    assert any((a["uid"] != b["uid"]).any() for a, b in zip(first, other))


def test_skipping_batches_resumes_exactly(records):
    ds = records_dataset(records, SPEC, 4, True, seed=7, seq_length=L)
    resumed = [b["uid"].numpy() for b in ds.skip(21).take(12)]
    whole = [b["uid"] for b in _batches(records, 33)][21:]
    for a, b in zip(resumed, whole):
        np.testing.assert_array_equal(a, b)


def test_replicas_of_one_step_share_a_bucket(records):
    ctx = tf.distribute.InputContext(
        num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=2
    )
    batches = _batches(records, 32, ctx=ctx, batch=2)
    widths = [b["input_ids"].shape[1] for b in batches]
    assert widths[0::2] == widths[1::2]
    assert all(b["input_ids"].shape[0] == 2 for b in batches)


def test_one_bucket_or_several_pipelines_keep_googles_batches(records):
    ds = records_dataset(records, SPEC, 4, True, seed=7)
    assert all(b["input_ids"].shape == (4, L) for b in ds.take(3))
    ctx = tf.distribute.InputContext(
        num_input_pipelines=2, input_pipeline_id=0, num_replicas_in_sync=2
    )
    assert all(b["input_ids"].shape[1] == L for b in _batches(records, 3, ctx=ctx))


def test_eval_plan_covers_every_record_once_in_whole_batches():
    lengths = np.array([5, 40, 33, 128, 0, 64, 65, 31, 32, 16, 17, 97])
    plan = bucketing.eval_batches_plan(lengths, 4, bucketing.bucket_lengths(128))
    members = np.concatenate([m for _, _, m in plan])
    assert sorted(members[members >= 0]) == list(range(len(lengths)))
    for length, batch, m in plan:
        assert len(m) % batch == 0 and all(lengths[i] <= length for i in m if i >= 0)
    assert [(b, sorted(m[m >= 0])) for b, _, m in plan] == [
        (16, [0, 4, 9]),
        (32, [7, 8, 10]),
        (48, [1, 2]),
        (64, [5]),
        (96, [6]),
        (128, [3, 11]),
    ]
    assert [batch for _, batch, _ in plan] == [4] * 6  # one batch of 4 holds each bucket


def test_eval_batches_hold_the_positions_of_batch_size_records_at_max_length():
    """Batches of a short bucket take more records (batch × 128 // length, a multiple of the
    batch size), never more than the bucket's records need."""
    lengths = np.array([10] * 70 + [30] * 9 + [60] * 40 + [100] * 20 + [120] * 3)
    plan = bucketing.eval_batches_plan(lengths, 4, bucketing.bucket_lengths(128))
    batches = {b: batch for b, batch, _ in plan}
    assert batches == {16: 32, 32: 12, 64: 8, 128: 4}  # 16: 4·8; 32: 3 batches of 4 needed
    for length, batch, m in plan:
        assert batch * length <= 4 * 128 and len(m) % batch == 0 and len(m) - batch < (m >= 0).sum()


class Echo(tf.keras.Model):
    """Each record's uid, the sum of its ids and its ids doubled per token; remembers the datasets
    it predicts."""

    datasets: list = []

    def predict(self, x, **kwargs):
        Echo.datasets.append(x)
        return super().predict(x, **kwargs)

    def call(self, inputs):
        ids = tf.cast(inputs["input_ids"], tf.float32)
        return {"uid": inputs["uid"], "total": tf.reduce_sum(ids, axis=1), "tokens": 2.0 * ids}


def test_bucketed_prediction_reads_the_file_once_and_equals_fixed(records, monkeypatch):
    model = Echo()
    with bucket_by_length(False):
        fixed = predict_records(model, records, SPEC, 300, 8, seq_length=L)
    lengths = _lengths(records)
    opened, reader = [], tf.data.TFRecordDataset
    monkeypatch.setattr(
        tf.data, "TFRecordDataset", lambda *a, **k: opened.append(a) or reader(*a, **k)
    )
    Echo.datasets.clear()
    bucketed = predict_records(
        model, records, SPEC, 300, 8, seq_length=L, token_outputs=("tokens",)
    )
    assert len(opened) == 1  # one pass over the file, whatever the number of buckets
    assert len(Echo.datasets) >= 3  # one predict per bucket used
    off = tf.data.experimental.AutoShardPolicy.OFF  # every worker predicts every record
    assert all(d.options().experimental_distribute.auto_shard_policy == off for d in Echo.datasets)
    np.testing.assert_array_equal(bucketed["uid"], fixed["uid"])
    np.testing.assert_array_equal(fixed["uid"][:, 0], np.arange(300))  # file order
    np.testing.assert_array_equal(bucketed["total"], fixed["total"])
    computed = np.isfinite(bucketed["tokens"])  # positions up to the bucket, -inf past it
    widths = computed.sum(1)
    assert set(widths) <= set(bucketing.bucket_lengths(L)) and len(set(widths)) >= 3
    assert (widths >= lengths).all()
    np.testing.assert_array_equal(computed, np.arange(L)[None] < widths[:, None])
    np.testing.assert_array_equal(bucketed["tokens"][computed], fixed["tokens"][computed])
    with pytest.raises(ValueError, match="train.tf_record: 300 records, expected 299"):
        predict_records(model, records, SPEC, 299, 8, seq_length=L)


def _lengths(path):
    ds = tf.data.TFRecordDataset(path).map(lambda s: decode(s, SPEC))
    return np.array([int(r["length"][0]) for r in ds])


# A bucketed run under MirroredStrategy evaluates as at fixed length: checked in the mirrored
# process of tests/engine/test_flag_matrix.py, which already trains and evaluates bucketed.


def test_bucketed_resume_equals_unbroken_run(fixtures_dir, data_dir, tmp_path):
    """CoLA at max_seq_length 64 (batches of 16, 32, 48 or 64): restarted from ckpt-2, a run ends at
    ckpt-4 where an unbroken one ends."""
    import os
    import shutil

    from albert_tf import AlbertConfig
    from albert_tf.engine.finetuning_options import FineTuningOptions
    from albert_tf.tasks.glue.task import GlueTask, run_glue
    from albert_tf.text.encoding import TextEncoder

    encoder = TextEncoder.from_files(str(fixtures_dir / "spm.model"), do_lower_case=True)
    task = GlueTask("cola", str(data_dir), encoder, 64, str(tmp_path / "cache"))
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")

    def run(out):
        opts = FineTuningOptions(
            output_dir=str(out),
            train_batch_size=8,
            train_step=4,
            warmup_step=1,
            save_checkpoints_steps=2,
            learning_rate=1e-3,
            seed=3,
            verbose=0,
            init_checkpoint=str(fixtures_dir / "albert_tiny" / "model.ckpt-best"),
        )
        run_glue(config, task, opts, do_train=True)

    run(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    for f in os.listdir(tmp_path / "b"):
        if f.startswith(("ckpt-4", "checkpoint")):
            os.remove(tmp_path / "b" / f)
    tf.compat.v1.train.update_checkpoint_state(str(tmp_path / "b"), "ckpt-2", ["ckpt-2"])
    run(tmp_path / "b")
    a, b = (tf.train.load_checkpoint(str(tmp_path / d / "ckpt-4")) for d in "ab")
    names = [n for n in a.get_variable_to_shape_map() if "CHECKPOINTABLE" not in n]
    assert len(names) > 50
    for n in names:
        np.testing.assert_allclose(b.get_tensor(n), a.get_tensor(n), atol=1e-6, rtol=0, err_msg=n)
