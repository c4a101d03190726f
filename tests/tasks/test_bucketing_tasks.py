"""Bucketed, padding-free evaluation and prediction (the fine-tuning default) equal Google's
fixed-length, padded batches for every driver's task (GLUE, SQuAD v1.1/v2.0, RACE): the same
outputs (≤1e-5), metrics and output order."""

import json
import random

import numpy as np
import pytest

from albert_tf import AlbertConfig, load_original_checkpoint
from albert_tf.engine import bucketing
from albert_tf.engine.finetuning import bucket_by_length
from albert_tf.engine.records import decode
from albert_tf.modeling.padding_free import set_padding_free
from albert_tf.text.encoding import TextEncoder


@pytest.fixture(scope="module")
def tiny(fixtures_dir):
    return (
        AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json"),
        str(fixtures_dir / "albert_tiny" / "model.ckpt-best"),
    )


def _model(model_fn, checkpoint):
    model = model_fn()
    load_original_checkpoint(model, checkpoint)
    return model


def _buckets_used(path, spec, seq_length):
    """The bucket lengths the records of `path` fall in (so a test shows it crosses several)."""
    import tensorflow as tf

    rows = bucketing.token_features(spec, seq_length)["input_mask"]
    masks = tf.data.TFRecordDataset(path).batch(512).map(lambda s: decode(s, spec))
    lengths = np.concatenate(
        [bucketing.record_lengths(m["input_mask"], rows, seq_length).numpy() for m in masks]
    )
    return {
        b
        for b, _, _ in bucketing.eval_batches_plan(lengths, 1, bucketing.bucket_lengths(seq_length))
    }


def _both(model, fn):
    """fn() with Google's fixed-length padded batches, then bucketed and padding-free."""
    with bucket_by_length(False):
        fixed = fn()
    set_padding_free(model, True)
    try:
        with bucket_by_length(True):
            bucketed = fn()
    finally:
        set_padding_free(model, False)
    return fixed, bucketed


def test_glue_bucketed_equals_fixed(tiny, fixtures_dir, data_dir, tmp_path):
    from albert_tf.tasks.classification.task import classifier_model_fn
    from albert_tf.tasks.glue.task import GlueTask

    encoder = TextEncoder.from_files(str(fixtures_dir / "spm.model"), do_lower_case=True)
    task = GlueTask("sst-2", str(data_dir), encoder, 64, str(tmp_path))
    assert len(_buckets_used(task.records("dev")[0], task.spec, 64)) >= 2
    model = _model(classifier_model_fn(tiny[0], task), tiny[1])
    (pf, of), (pb, ob) = _both(model, lambda: task.predictions(model, "dev", 8))
    np.testing.assert_allclose(ob["probabilities"], of["probabilities"], atol=1e-5)
    np.testing.assert_array_equal(pb, pf)
    fixed, bucketed = _both(model, lambda: task.evaluate(model, 8))
    assert fixed.keys() == bucketed.keys()
    for k in fixed:
        assert bucketed[k] == pytest.approx(fixed[k], abs=1e-5), k


def _write_squad(path, n, seed, v2):
    """SQuAD-format questions on paragraphs of 3 to 60 words (windows short and long)."""
    rng = random.Random(seed)
    words = "the value of this object is a name used in an expression returned by it".split()
    paragraphs = []
    for i in range(n):
        context = " ".join(rng.choices(words, k=rng.choice([3, 8, 60])) + ["code", "list"])
        qa = {
            "id": f"q{i}",
            "question": "what is the code",
            "answers": [{"text": "list", "answer_start": context.index("code list") + 5}],
        }
        if v2 and i % 3 == 0:
            qa.update(is_impossible=True, answers=[])
        paragraphs.append({"context": context, "qas": [qa]})
    path.write_text(
        json.dumps(
            {"version": "2.0" if v2 else "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}
        )
    )


@pytest.mark.parametrize("version", ["v1.1", "v2.0"])
def test_squad_bucketed_equals_fixed(version, tiny, fixtures_dir, tmp_path):
    from albert_tf.tasks.squad.task import SquadSettings, SquadTask, squad_model_fn
    from albert_tf.text.tokenization import FullTokenizer

    spm = str(fixtures_dir / "spm.model")
    _write_squad(tmp_path / "dev.json", 14, 0, version == "v2.0")
    settings = SquadSettings(
        version_2_with_negative=version == "v2.0",
        max_seq_length=64,
        doc_stride=24,
        max_query_length=16,
    )
    task = SquadTask(
        settings,
        FullTokenizer(spm_model_file=spm),
        spm,
        str(tmp_path),
        predict_file=str(tmp_path / "dev.json"),
    )
    _, features, path, n = task.predict_data()
    assert len(_buckets_used(path, task.predict_spec, 64)) >= 2
    model = _model(squad_model_fn(tiny[0], settings), tiny[1])
    fixed, bucketed = _both(model, lambda: task.predict(model, 8))
    assert bucketed[0] == fixed[0]  # the same answer for every question
    for q, entries in fixed[1].items():  # the same n-best lists
        assert [e["text"] for e in bucketed[1][q]] == [e["text"] for e in entries]
        assert [e["probability"] for e in bucketed[1][q]] == pytest.approx(
            [e["probability"] for e in entries], abs=1e-5
        )
    if version == "v2.0":
        for q in fixed[2]:
            assert bucketed[2][q] == pytest.approx(fixed[2][q], abs=1e-5)
    metrics = _both(model, lambda: task.evaluate(model, 8))
    assert metrics[0] == pytest.approx(metrics[1], abs=1e-6)


def _write_race(root, n, seed):
    """RACE-format questions whose articles vary from a few words to well past 64 pieces."""
    rng = random.Random(seed)
    words = "the value of this object is a name used in an expression returned by it".split()
    for split in ("dev",):
        (root / "RACE" / split / "high").mkdir(parents=True)
        (root / "RACE" / split / "middle").mkdir(parents=True)
        for i in range(n):
            article = " ".join(rng.choices(words, k=rng.choice([3, 6, 40])))
            options = [" ".join(rng.choices(words, k=rng.randint(1, 3))) for _ in range(4)]
            level = "high" if i % 2 else "middle"
            (root / "RACE" / split / level / f"{i}.txt").write_text(
                json.dumps(
                    {
                        "id": f"{i}.txt",
                        "article": article,
                        "questions": ["what is it"],
                        "options": [options],
                        "answers": ["ABCD"[i % 4]],
                    }
                )
            )


def test_race_bucketed_equals_fixed(tiny, fixtures_dir, tmp_path):
    from albert_tf.tasks.race.task import RaceTask, race_model_fn

    _write_race(tmp_path, 12, 0)
    encoder = TextEncoder.from_files(str(fixtures_dir / "spm.model"))
    task = RaceTask(str(tmp_path), encoder, 64, str(tmp_path / "cache"), max_qa_length=16)
    assert len(_buckets_used(task.records("dev")[0], task.spec, 64)) >= 2
    model = _model(race_model_fn(tiny[0], 0.0), tiny[1])
    fixed, bucketed = _both(model, lambda: task._probabilities(model, "dev", 4))
    np.testing.assert_allclose(bucketed, fixed, atol=1e-5)
    metrics = _both(model, lambda: task.evaluate(model, 4))
    assert metrics[0] == pytest.approx(metrics[1], abs=1e-5)
