import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.engine.records import cached_records, decode, serialize, write_records

SPEC = {"input_ids": ("int64", 4), "label": ("float", 1)}


def test_write_and_decode(tmp_path):
    records = [{"input_ids": [1, 2, 3, 0], "label": 0.5}, {"input_ids": [4, 5, 0, 0], "label": 1.0}]
    path = tmp_path / "x.tf_record"
    assert write_records(path, records, SPEC) == 2
    ds = tf.data.TFRecordDataset(str(path)).batch(2).map(lambda s: decode(s, SPEC))
    batch = next(iter(ds))
    assert batch["input_ids"].dtype == tf.int32
    np.testing.assert_array_equal(batch["input_ids"], [[1, 2, 3, 0], [4, 5, 0, 0]])
    np.testing.assert_allclose(batch["label"][:, 0], [0.5, 1.0])
    assert os.listdir(tmp_path) == ["x.tf_record"]


def test_bad_record_leaves_nothing(tmp_path):
    def records():
        yield {"input_ids": [1, 2, 3, 4], "label": 0.0}
        yield {"input_ids": [1, 2], "label": 0.0}

    with pytest.raises(ValueError, match="'input_ids' has length 2, the spec says 4"):
        write_records(tmp_path / "y.tf_record", records(), SPEC)
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="lacks feature 'label'"):
        serialize({"input_ids": [1, 2, 3, 4]}, SPEC)


def test_cache_key_changes_with_params(tmp_path):
    calls = []

    def make():
        calls.append(1)
        return [{"input_ids": [1, 2, 3, 4], "label": 1.0}]

    p1, n1 = cached_records(tmp_path, "task_train", {"max_seq_length": 4}, SPEC, make)
    p2, _ = cached_records(tmp_path, "task_train", {"max_seq_length": 4}, SPEC, make)
    p3, _ = cached_records(tmp_path, "task_train", {"max_seq_length": 8}, SPEC, make)
    assert p1 == p2 and p1 != p3 and n1 == 1 and len(calls) == 2
