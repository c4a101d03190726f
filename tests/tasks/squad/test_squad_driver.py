"""SQuAD on the engine: run_squad.py end to end (v1.1 and v2.0) and a span task that learns."""

import json
import os
import pathlib
import random
import sys

import pytest
import python_processes

from albert_tf import AlbertConfig
from albert_tf.engine.finetuning import run_finetuning
from albert_tf.engine.finetuning_options import FineTuningOptions
from albert_tf.tasks.squad.task import SquadSettings, SquadTask, squad_model_fn
from albert_tf.text.tokenization import FullTokenizer

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[3])


@pytest.mark.parametrize("version", ["v1.1", "v2.0"])
def test_run_squad_end_to_end(version, fixtures_dir, data_dir, tmp_path):
    tiny = fixtures_dir / "albert_tiny"
    data = data_dir / "squad" / version / ("squad.json" if version == "v1.1" else "dev-v2.0.json")
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        os.path.join(ROOT, "run_squad.py"),
        f"--train_file={data}",
        f"--predict_file={data}",
        f"--albert_config_file={tiny / 'albert_config.json'}",
        f"--init_checkpoint={tiny / 'model.ckpt-best'}",
        f"--spm_model_file={fixtures_dir / 'spm.model'}",
        f"--output_dir={out}",
        "--max_seq_length=64",
        "--doc_stride=32",
        "--max_query_length=16",
        "--train_batch_size=8",
        "--predict_batch_size=8",
        "--eval_batch_size=8",
        "--train_step=4",
        "--warmup_step=1",
        "--save_checkpoints_steps=2",
        "--do_train",
        "--do_eval",
        "--do_predict",
    ]
    if version == "v2.0":
        cmd.append("--version_2_with_negative")
    else:  # the export of both versions is tested in test_squad_serving.py; here the flag
        cmd.append(f"--export_dir={tmp_path / 'export'}")
    r = python_processes.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    preds = json.loads((out / "predictions.json").read_text())
    examples = json.loads(data.read_text())
    n_questions = sum(len(p["qas"]) for a in examples["data"] for p in a["paragraphs"])
    assert len(preds) == n_questions
    assert (out / "nbest_predictions.json").exists() and (out / "model.ckpt-best.index").exists()
    results = (out / "eval_results.txt").read_text()
    assert "f1 = " in results
    if version == "v2.0":
        assert (out / "null_odds.json").exists() and "HasAns_f1" in results
    if version == "v1.1":
        check_export(out, tmp_path / "export", examples)


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
