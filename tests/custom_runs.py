"""The run_classifier.py --task_name=custom runs of tests/tasks/classification/test_custom.py,
test_multi_label.py and tests/tasks/glue/test_chinese_classifier.py, made in ONE process
(tests/scripts/bad_input_runner.py: TensorFlow imported once), once per test run, and the data
files they read."""

import csv
import json
import pathlib
import random
import sys

import python_processes
from shared_runs import once_per_test_run

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tests" / "scripts" / "bad_input_runner.py"
# multi-label: one word per label (words the fixture's SentencePiece model keeps whole), filler
CUES = {"sports": "function", "music": "string", "tech": "python"}
FILLER = "line loop name type method return call code set key".split()
WORDS = "我 们 的 中 文 很 好 北 京 是 国 首 都 大 学 人 有 一 个 天 气 不 错 ， 。 ！".split()
WORDS += ["ALBERT", "2019"]  # the Chinese texts' characters and words


def _glue_rows(data_dir, task, split):
    lines = (data_dir / task / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines[1:]]


def write_csv(path, header, rows):
    """A CSV file: the header row, then `rows`."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header] + rows)


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


def write_own_data(d, data_dir):
    """Three users' folders made from the GLUE samples under `d`: SST-2 as CSV (single text,
    labels neg/pos, an extra column), MRPC as JSONL (pairs, integer labels 1/2/10), STS-B as TSV
    files with their own names (regression), and dev_only (the CSV's dev and test)."""
    csv_dir, jsonl_dir, tsv_dir = d / "csv", d / "jsonl", d / "tsv"
    for folder in (csv_dir, jsonl_dir, tsv_dir, d / "dev_only"):
        folder.mkdir(parents=True)
    names = {"0": "neg", "1": "pos"}
    for split in ("train", "dev"):
        rows = [
            [i, text, names[label]]
            for i, (text, label) in enumerate(_glue_rows(data_dir, "SST-2", split))
        ]
        write_csv(csv_dir / f"{split}.csv", ["id", "review", "sentiment"], rows)
    test = [[i, text] for i, (_, text) in enumerate(_glue_rows(data_dir, "SST-2", "test"))][:20]
    write_csv(csv_dir / "test.csv", ["id", "review"], test)
    for split in ("train", "dev"):
        rows = [
            {
                "premise": r[3],
                "hypothesis": r[4],
                "label": 1 if i % 5 == 0 else (10 if r[0] == "1" else 2),
            }
            for i, r in enumerate(_glue_rows(data_dir, "MRPC", split))
        ]
        _write_jsonl(jsonl_dir / f"{split}.jsonl", rows)
    _write_jsonl(
        jsonl_dir / "test.jsonl",
        [{"premise": r[3], "hypothesis": r[4]} for r in _glue_rows(data_dir, "MRPC", "test")[:10]],
    )
    for split in ("train", "dev"):
        rows = ["s1\ts2\tscore"] + [
            "\t".join([r[7], r[8], r[-1]]) for r in _glue_rows(data_dir, "STS-B", split)
        ]
        (tsv_dir / f"my_{split}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    for split in ("dev", "test"):
        (d / "dev_only" / f"{split}.csv").write_bytes((csv_dir / f"{split}.csv").read_bytes())


def label_rows(rng, n):
    """`n` multi-label rows {"text", "tags"}: 0-2 labels, each label's cue word in the text."""
    rows = []
    for _ in range(n):
        labels = sorted(rng.sample(sorted(CUES), rng.randint(0, 2)))
        words = [CUES[x] for x in labels] + rng.sample(FILLER, 4)
        rng.shuffle(words)
        rows.append({"text": " ".join(words), "tags": labels})
    return rows


def _write_multi_label(data):
    rng = random.Random(0)
    data.mkdir(parents=True)
    for split, n in (("train", 96), ("dev", 24), ("test", 16)):
        _write_jsonl(data / f"{split}.jsonl", label_rows(rng, n))


def _write_chinese(data):
    rng = random.Random(0)
    data.mkdir(parents=True)
    for split, n in (("train", 24), ("dev", 8), ("test", 8)):
        rows = [
            [
                "".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))),
                rng.choice(["正面", "负面"]),
            ]
            for _ in range(n)
        ]
        write_csv(data / f"{split}.csv", ["text", "label"], rows)


def custom_flags(fixtures_dir, **flags):
    """run_classifier.py's flags for --task_name=custom on the tiny fixture model (length 32,
    3 steps), `flags` added or replacing (True: a bare --flag).

    Args:
        fixtures_dir: tests/data/fixtures.
        **flags: More flags.

    Returns:
        The flags.
    """
    tiny = fixtures_dir / "albert_tiny"
    base = {
        "task_name": "custom",
        "albert_config_file": tiny / "albert_config.json",
        "init_checkpoint": tiny / "model.ckpt-best",
        "spm_model_file": tiny / "30k-clean.model",
        "max_seq_length": 32,
        "train_batch_size": 8,
        "eval_batch_size": 8,
        "predict_batch_size": 8,
        "train_step": 3,
        "save_checkpoints_steps": 3,
        "warmup_step": 0,
        "learning_rate": 1e-4,
    }
    return [f"--{k}" if v is True else f"--{k}={v}" for k, v in {**base, **flags}.items()]


def _cases(fixtures_dir, folder):
    own, out = folder / "own", folder / "own-out"
    all_steps = {"do_train": True, "do_eval": True, "do_predict": True}
    release = fixtures_dir / "albert_zh" / "albert_zh_tiny"
    return {
        "csv": custom_flags(
            fixtures_dir,
            data_dir=own / "csv",
            text_a_column="review",
            label_column="sentiment",
            output_dir=out / "csv",
            export_dir=folder / "own-export",
            **all_steps,
        ),
        "jsonl": custom_flags(
            fixtures_dir,
            data_dir=own / "jsonl",
            text_a_column="premise",
            text_b_column="hypothesis",
            output_dir=out / "jsonl",
            **all_steps,
        ),
        "tsv": custom_flags(
            fixtures_dir,
            train_file=own / "tsv" / "my_train.tsv",
            dev_file=own / "tsv" / "my_dev.tsv",
            text_a_column="s1",
            text_b_column="s2",
            label_column="score",
            is_regression=True,
            output_dir=out / "tsv",
            do_eval=True,
        ),
        "reuse": custom_flags(  # after "csv": its labels.json beside --init_checkpoint
            fixtures_dir,
            data_dir=own / "dev_only",
            text_a_column="review",
            label_column="sentiment",
            output_dir=out / "reuse",
            init_checkpoint=out / "csv" / "model.ckpt-best",
            do_eval=True,
            do_predict=True,
        ),
        "multi_label": custom_flags(
            fixtures_dir,
            multi_label=True,
            data_dir=folder / "multi" / "data",
            label_column="tags",
            output_dir=folder / "multi" / "out",
            export_dir=folder / "multi" / "export",
            max_seq_length=16,
            train_batch_size=16,
            train_step=60,
            warmup_step=6,
            save_checkpoints_steps=60,
            learning_rate=2e-3,
            **all_steps,
        ),
        "chinese": [  # brightmart's layout: the checkpoint with its own vocab.txt
            "--task_name=custom",
            f"--data_dir={folder / 'zh' / 'data'}",
            "--text_a_column=text",
            "--label_column=label",
            f"--albert_config_file={release / 'albert_config.json'}",
            f"--init_checkpoint={release}",
            f"--vocab_file={release / 'vocab.txt'}",
            f"--output_dir={folder / 'zh' / 'out'}",
            f"--export_dir={folder / 'zh' / 'export'}",
            "--max_seq_length=16",
            "--train_batch_size=8",
            "--eval_batch_size=8",
            "--predict_batch_size=8",
            "--train_step=2",
            "--warmup_step=1",
            "--save_checkpoints_steps=2",
            "--do_train",
            "--do_eval",
            "--do_predict",
        ],
    }


def _make(fixtures_dir, data_dir, folder):
    write_own_data(folder / "own", data_dir)
    _write_multi_label(folder / "multi" / "data")
    _write_chinese(folder / "zh" / "data")
    cases = _cases(fixtures_dir, folder)
    (folder / "cases.json").write_text(json.dumps([[str(a) for a in c] for c in cases.values()]))
    r = python_processes.run(
        [
            sys.executable,
            str(RUNNER),
            str(ROOT / "run_classifier.py"),
            str(folder / "cases.json"),
            str(folder / "results.json"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(zip(cases, json.loads((folder / "results.json").read_text())))


def custom_runs(tmp_path_factory, fixtures_dir, data_dir):
    """The runs, once per test run: "csv" (single text, trained, evaluated, predicted,
    exported), "jsonl" (pairs, the same without export), "tsv" (regression from explicit files,
    evaluated from the pretrained checkpoint), "reuse" (eval/predict elsewhere with the csv
    run's labels.json), "multi_label" (60 steps, exported), "chinese" (a brightmart checkpoint
    with its vocab.txt, exported).

    Args:
        tmp_path_factory: pytest's fixture.
        fixtures_dir: tests/data/fixtures.
        data_dir: tests/data/samples.

    Returns:
        ({name: {"argv", "code", "stderr"}}, folder): under folder, own/ and own-out/<name>/,
        own-export/, multi/ and zh/ (each data/, out/, export/).
    """
    return once_per_test_run(
        tmp_path_factory,
        "custom_classifier_runs",
        lambda folder: _make(fixtures_dir, data_dir, folder),
    )
