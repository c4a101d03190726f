"""SQuAD on the engine: run_squad.py end to end (v1.1 and v2.0) with every path on a bucket
(ram://, tests/bucket_runs.py), a resume from the bucket, and a span task that learns."""

import json
import random

from bucket_runs import B, assert_ok, checkpoint_steps, history_steps
import pytest
from squad_runs import squad_runs as shared_squad_runs

from albert_tf import AlbertConfig
from albert_tf.engine.finetuning import run_finetuning
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.tasks.squad.task import SquadSettings, SquadTask, squad_model_fn
from albert_tf.text.tokenization import FullTokenizer


@pytest.fixture(scope="module")
def squad_runs(fixtures_dir, data_dir, tmp_path_factory):
    return shared_squad_runs(tmp_path_factory, fixtures_dir, data_dir)


@pytest.mark.parametrize("version", ["v1.1", "v2.0"])
def test_run_squad_end_to_end(version, data_dir, squad_runs):
    r, folder = squad_runs
    assert_ok(r["cases"][0 if version == "v1.1" else 2])
    data = data_dir / "squad" / version / ("squad.json" if version == "v1.1" else "dev-v2.0.json")
    out = folder / version
    preds = json.loads((out / "predictions.json").read_text())
    examples = json.loads(data.read_text())
    n_questions = sum(len(p["qas"]) for a in examples["data"] for p in a["paragraphs"])
    assert len(preds) == n_questions
    assert (out / "nbest_predictions.json").exists() and (out / "model.ckpt-best.index").exists()
    results = (out / "eval_results.txt").read_text()
    assert "f1 = " in results
    if version == "v2.0":
        assert (out / "null_odds.json").exists() and "HasAns_f1" in results
    if version == "v1.1":  # the export of both versions is tested in test_squad_serving.py
        check_export(out, folder / "export", examples)


def test_run_squad_resumes_on_a_bucket(squad_runs):
    """The second v1.1 run (4 steps) resumed from the first's step-2 checkpoint on the bucket:
    step 2 was not trained or evaluated again."""
    r, _ = squad_runs
    for case in r["cases"][:2]:
        assert_ok(case)
    out = r["trees"][f"{B}/squad-v1.1"]
    assert checkpoint_steps(out) == [2, 4] and "model.ckpt-best.index" in out
    assert history_steps(r["texts"][f"{B}/squad-v1.1/eval_history.json"]) == [2, 4]
    assert any(f.endswith("/saved_model.pb") for f in r["trees"][f"{B}/export"])


def check_export(out, export, examples):
    """The driver's SavedModel gives the top answer of its nbest_predictions.json."""
    import tensorflow as tf

    from albert_tf import load_saved_model

    nbest = json.loads((out / "nbest_predictions.json").read_text())
    qas = [(q, p["context"]) for a in examples["data"] for p in a["paragraphs"] for q in p["qas"]][
        :6
    ]
    serve = load_saved_model(export).signatures["serving_default"]
    got = serve(
        question=tf.constant([q["question"] for q, _ in qas]),
        context=tf.constant([c for _, c in qas]),
    )
    assert [t.decode() for t in got["answer_text"].numpy()] == [
        nbest[q["id"]][0]["text"] for q, _ in qas
    ]


def make_span_task(path, n, seed):
    """Paragraphs of filler words where the answer is the word after 'code'."""
    rng = random.Random(seed)
    filler = "the value of this object is a name used in an expression returned by function".split()
    answers = "list string number error file line loop statement import keyword".split()
    paragraphs = []
    for i in range(n):
        words = rng.choices(filler, k=14)
        answer = rng.choice(answers)
        at = rng.randint(0, 12)
        words[at:at] = ["code", answer]
        context = " ".join(words)
        start = len(" ".join(words[: at + 1])) + 1
        assert context[start : start + len(answer)] == answer
        paragraphs.append(
            {
                "context": context,
                "qas": [
                    {
                        "id": f"q{i}",
                        "question": "what is the code",
                        "answers": [{"text": answer, "answer_start": start}],
                    }
                ],
            }
        )
    path.write_text(
        json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]})
    )


def test_squad_training_learns_a_span_task(fixtures_dir, tmp_path):
    make_span_task(tmp_path / "train.json", 400, 0)
    make_span_task(tmp_path / "dev.json", 60, 1)
    spm = str(fixtures_dir / "spm.model")
    settings = SquadSettings(max_seq_length=48, doc_stride=32, max_query_length=8)
    task = SquadTask(
        settings,
        FullTokenizer(spm_model_file=spm),
        spm,
        str(tmp_path / "cache"),
        str(tmp_path / "train.json"),
        str(tmp_path / "dev.json"),
    )
    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    opts = FineTuningOptions(
        output_dir=str(tmp_path / "out"),
        train_batch_size=16,
        eval_batch_size=16,
        learning_rate=2e-3,
        train_step=300,
        warmup_step=20,
        save_checkpoints_steps=150,
        iterations_per_loop=50,
        verbose=0,
        init_checkpoint=str(fixtures_dir / "albert_tiny" / "model.ckpt-best"),
    )
    results = run_finetuning(
        task, squad_model_fn(config, settings), opts, do_train=True, do_eval=True
    )
    # Trivial baselines (first or a random paragraph word) score F1 ≈ 0-10 here.
    assert results["f1"] > 60, results
