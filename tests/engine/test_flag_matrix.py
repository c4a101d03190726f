"""Flag combinations under mirrored (two logical CPUs; --bucket_by_length's eval equal to fixed
length there too) and two-worker MultiWorkerMirrored runs, with iterations_per_loop > 1 (the
engine's restore and steps_per_execution paths)."""

import json
import os
import pathlib
import sys

import pytest
import python_processes
from test_distribute import fingerprint, pretraining_argv, run_two_workers

ROOT = os.fspath(pathlib.Path(__file__).resolve().parents[2])


def test_every_flag_combination_under_mirrored_and_bucketed_eval_as_fixed_length(
    fixtures_dir, data_dir
):
    """One MirroredStrategy process (two logical CPUs, iterations_per_loop=2): every
    do_train/do_eval/do_predict combination gives its results, and the train+eval one, with
    length-bucketed batches, gives the metrics its checkpoint gets evaluated at fixed length
    (test_bucketing.py's claim under mirrored)."""
    r = python_processes.run(
        [
            sys.executable,
            os.path.join(ROOT, "tests", "scripts", "flag_matrix_mirrored.py"),
            str(fixtures_dir),
            str(data_dir),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(out["combinations"]) == 7
    for flags, keys in out["combinations"].items():
        assert ("accuracy" in keys) == ("e" in flags), (flags, keys)
        assert ("prediction_files" in keys) == ("p" in flags), (flags, keys)
    bucketed, fixed = out["bucketed"], out["fixed"]
    assert bucketed.keys() == fixed.keys() and "matthews_corrcoef" in fixed
    for k, v in fixed.items():
        assert bucketed[k] == pytest.approx(v, abs=1e-5), k


def test_multi_worker_pretraining_with_eval_iterations_per_loop(fixtures_dir, tmp_path):
    """Two workers of run_pretraining.py with --iterations_per_loop=2 (the engine's own
    multi-step train_function: Keras' crashed under MultiWorkerMirrored) and --do_eval (one step
    per call inside the run) agree; the chief alone writes output_dir."""
    out = tmp_path / "out"
    argv = pretraining_argv(
        fixtures_dir,
        out,
        "--eval_batch_size=8",
        "--max_eval_steps=2",
        "--do_eval",
        "--iterations_per_loop=2",
    )
    codes, logs = run_two_workers(argv, tmp_path)
    assert codes == [0, 0], logs[0][-2000:] + logs[1][-2000:]
    assert fingerprint(logs[0]) == fingerprint(logs[1])
    assert "masked_lm_accuracy = " in (out / "eval_results.txt").read_text()
    files = sorted(os.listdir(out))
    assert "ckpt-4.index" in files and "checkpoint" in files
    # the non-chief wrote into its own temporary directory, never into output_dir
    assert not any("worker1" in f for f in files)


def _run_driver(script, args):
    r = python_processes.run(
        [sys.executable, os.path.join(ROOT, script), *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-3000:]


def _common(fixtures_dir, out):
    tiny = fixtures_dir / "albert_tiny"
    return [
        f"--albert_config_file={tiny / 'albert_config.json'}",
        f"--init_checkpoint={tiny / 'model.ckpt-best'}",
        f"--spm_model_file={fixtures_dir / 'spm.model'}",
        f"--output_dir={out}",
        "--max_seq_length=64",
        "--train_step=2",
        "--warmup_step=1",
        "--save_checkpoints_steps=2",
        "--iterations_per_loop=2",
        "--learning_rate=1e-4",
    ]


def test_squad_train_predict_then_predict_from_its_own_output_dir(fixtures_dir, data_dir, tmp_path):
    """The crash of issue 12 (--do_train --do_predict without --do_eval), on run_squad.py, then a
    second run that only predicts from the first run's output_dir (the restore path)."""
    data = data_dir / "squad" / "v1.1" / "squad.json"
    out = tmp_path / "out"
    args = _common(fixtures_dir, out) + [
        f"--train_file={data}",
        f"--predict_file={data}",
        "--doc_stride=32",
        "--max_query_length=16",
        "--train_batch_size=8",
        "--predict_batch_size=8",
    ]
    n_questions = sum(
        len(p["qas"]) for a in json.loads(data.read_text())["data"] for p in a["paragraphs"]
    )
    _run_driver("run_squad.py", args + ["--do_train", "--do_predict"])
    first = json.loads((out / "predictions.json").read_text())
    assert len(first) == n_questions
    (out / "predictions.json").unlink()
    _run_driver("run_squad.py", args + ["--do_predict"])
    assert json.loads((out / "predictions.json").read_text()) == first


def test_race_train_predict_without_eval(fixtures_dir, data_dir, tmp_path):
    out = tmp_path / "out"
    args = _common(fixtures_dir, out) + [
        f"--data_dir={data_dir}",
        "--max_qa_length=16",
        "--train_batch_size=4",
        "--predict_batch_size=4",
    ]
    _run_driver(
        "run_race.py", args + ["--do_train", "--nodo_eval", "--do_predict"]
    )  # do_eval defaults on
    rows = (out / "race_predictions.tsv").read_text().splitlines()
    n_test = sum(
        len(json.loads(p.read_text())["questions"])
        for p in (data_dir / "RACE" / "test").glob("*/*.txt")
    )
    assert len(rows) == 1 + n_test
