"""Fixtures of the engine tests."""

import pytest
import tensorflow as tf


@pytest.fixture
def split_pretraining_records(fixtures_dir, tmp_path):
    """`split(files, per_file)`: the first files × per_file records of the pretraining fixture as
    `files` TFRecord files under tmp_path; returns their glob. Small files make short epochs whose
    file order is shuffled, so a few steps cross several shuffled epochs."""

    def split(files, per_file):
        source = str(fixtures_dir / "pretraining.tfrecord")
        records = list(tf.data.TFRecordDataset(source).take(files * per_file).as_numpy_iterator())
        for i in range(files):
            with tf.io.TFRecordWriter(str(tmp_path / f"part-{i}.tfrecord")) as writer:
                for record in records[i * per_file : (i + 1) * per_file]:
                    writer.write(record)
        return str(tmp_path / "part-*.tfrecord")

    return split
