"""run_ner.py end to end on CoNLL-style files with every path on a bucket (ram://,
tests/bucket_runs.py): trains, evaluates with seqeval's entity F1, writes a label per word,
exports a SavedModel that labels raw text as the Python path does, resumes from the bucket; bad
NER input is one line with exit code 2. The module's driver runs share one process."""

import json
import pathlib
import random
import subprocess
import sys

from bucket_runs import B, assert_ok, checkpoint_steps, history_steps, run_on_bucket
import pytest
from shared_runs import once_per_test_run

ROOT = pathlib.Path(__file__).resolve().parents[3]
# words the fixture's SentencePiece model keeps whole (one piece each): the label sits on a
# word's first piece, and a tiny model learns them in a few dozen steps
PEOPLE = "function object value module class".split()
PLACES = "list string number table python".split()
OTHER = "line loop name type method return call code set key".split()


def _sentence(rng):
    words, tags = [], []
    for _ in range(rng.randint(3, 7)):
        kind = rng.random()
        if kind < 0.25:
            name = rng.sample(PEOPLE, rng.randint(1, 2))
            words += name
            tags += ["B-PER"] + ["I-PER"] * (len(name) - 1)
        elif kind < 0.45:
            words.append(rng.choice(PLACES))
            tags.append("B-LOC")
        else:
            words.append(rng.choice(OTHER))
            tags.append("O")
    return words, tags


def _write(path, sentences, columns=2):
    lines = ["-DOCSTART- -X- -X- O", ""]
    for words, tags in sentences:
        lines += [
            f"{w} {t}" if columns == 2 else f"{w} NN B-NP {t}" for w, t in zip(words, tags)
        ] + [""]
    path.write_text("\n".join(lines))


def _write_ner_data(folder):
    rng = random.Random(0)
    folder.mkdir()
    _write(folder / "train.txt", [_sentence(rng) for _ in range(64)], columns=4)
    _write(folder / "dev.txt", [_sentence(rng) for _ in range(12)])
    _write(folder / "test.txt", [_sentence(rng) for _ in range(12)])


def _write_chinese_data(folder):
    """Chinese NER as MSRA / People's Daily ship it: a character per line."""
    rng = random.Random(2)
    names, places, other = "王李张", "京沪港", "的是在了和有我们去"

    def sentence():
        words, tags = [], []
        for _ in range(rng.randint(4, 9)):
            kind = rng.random()
            pool, tag = (
                (names, "PER") if kind < 0.2 else (places, "LOC") if kind < 0.35 else (other, None)
            )
            words.append(rng.choice(pool))
            tags.append(f"B-{tag}" if tag else "O")
        return words, tags

    folder.mkdir()
    for split, n in (("train", 16), ("dev", 4), ("test", 4)):
        _write(folder / f"{split}.txt", [sentence() for _ in range(n)])


TRAINING = [
    "--max_seq_length=32",
    "--train_batch_size=8",
    "--eval_batch_size=8",
    "--predict_batch_size=8",
    "--learning_rate=1e-3",
]
# the bad files run in the shared process: (train.txt, dev.txt, the error line's message)
BAD_FILES = [
    ("Ada B-PER\nsang O O\n", None, "train.txt, line 2: 3 columns"),
    ("Ada O\nLovelace I-PER\n", None, 'train.txt, line 2: "I-PER" follows "O"'),
    (
        "Ada B-PER\nsang O\n",
        "Oslo O\nis O\nfine O\nNorway B-LOC\n",
        "dev.txt, line 4: label 'B-LOC' is not in the label set ['O', 'B-PER']",
    ),
]


def _tiny_flags(fixtures_dir):
    tiny = fixtures_dir / "albert_tiny"
    return [
        f"--albert_config_file={tiny / 'albert_config.json'}",
        f"--init_checkpoint={tiny / 'model.ckpt-best'}",
        f"--spm_model_file={tiny / '30k-clean.model'}",
    ]


def _bad_case(fixtures_dir, data, out, dev):
    return [
        f"--data_dir={data}",
        *_tiny_flags(fixtures_dir),
        f"--output_dir={out}",
        *TRAINING,
        "--train_step=2",
        "--warmup_step=0",
        "--do_train",
        *(["--do_eval"] if dev else []),
    ]


def _ner_runs(fixtures_dir, folder):
    """Every run_ner.py run of this module in ONE ram_runner process: the CoNLL run on a bucket
    (80 steps with eval, predict and export, then a run to 84 steps that resumes from the
    bucket), the Chinese run on local files, and the bad files."""
    _write_ner_data(folder / "ner")
    _write_chinese_data(folder / "zh")
    files = [f"--{split}_file={B}/ner/{split}.txt" for split in ("train", "dev", "test")]
    bucket_model = [  # the tiny release with its own SentencePiece model, on the bucket
        f"--albert_config_file={B}/albert_tiny/albert_config.json",
        f"--init_checkpoint={B}/albert_tiny/model.ckpt-best",
        f"--spm_model_file={B}/albert_tiny/30k-clean.model",
    ]
    common = [*files, *bucket_model, f"--output_dir={B}/ner-out", *TRAINING]
    release = fixtures_dir / "albert_zh" / "albert_zh_tiny"
    chinese = [
        f"--data_dir={folder / 'zh'}",
        f"--albert_config_file={release / 'albert_config.json'}",
        f"--init_checkpoint={release}",
        f"--vocab_file={release / 'vocab.txt'}",
        f"--output_dir={folder / 'zh-out'}",
        "--max_seq_length=16",
        "--train_batch_size=4",
        "--eval_batch_size=4",
        "--predict_batch_size=4",
        "--train_step=2",
        "--warmup_step=0",
        "--save_checkpoints_steps=2",
        "--do_train",
        "--do_eval",
        "--do_predict",
        f"--export_dir={folder / 'zh-export'}",
    ]
    bad = []
    for i, (train, dev, _) in enumerate(BAD_FILES):
        data = folder / f"bad{i}"
        data.mkdir()
        (data / "train.txt").write_text(train)
        if dev:
            (data / "dev.txt").write_text(dev)
        bad.append(_bad_case(fixtures_dir, data, folder / f"bad{i}-out", dev))
    return run_on_bucket(
        folder,
        "run_ner.py",
        [
            *[[folder / "ner" / f"{s}.txt", f"{B}/ner/{s}.txt"] for s in ("train", "dev", "test")],
            [fixtures_dir / "albert_tiny", f"{B}/albert_tiny"],
        ],
        [
            common
            + ["--train_step=80", "--warmup_step=8", "--save_checkpoints_steps=40"]
            + ["--do_train", "--do_eval", "--do_predict", f"--export_dir={B}/export"],
            common
            + ["--train_step=84", "--warmup_step=8", "--save_checkpoints_steps=40"]
            + ["--do_train", "--do_eval"],
            chinese,
            *bad,
        ],
        trees=[f"{B}/ner-out", f"{B}/export"],
        texts=[f"{B}/ner-out/eval_history.json"],
        downloads=[[f"{B}/ner-out", folder / "out"], [f"{B}/export", folder / "export"]],
    )


@pytest.fixture(scope="module")
def ner_runs(fixtures_dir, tmp_path_factory):
    return once_per_test_run(
        tmp_path_factory, "ner_driver_runs", lambda folder: _ner_runs(fixtures_dir, folder)
    )


def _check_export(export, sentences):
    """The raw-text export labels each word as the Python path did."""
    import tensorflow as tf

    from albert_tf import load_saved_model

    serve = load_saved_model(export).signatures["serving_default"]
    got = serve(text=tf.constant([" ".join(w for w, _, _ in s) for s in sentences]))
    for s, labels, n in zip(sentences, got["labels"].numpy(), got["num_words"].numpy()):
        assert [x.decode() for x in labels[:n]] == [p for _, _, p in s]


def _predictions(path):
    """test_predictions.txt's sentences: rows of `word gold predicted`."""
    blocks = [b for b in path.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    return [[line.split() for line in b.splitlines()] for b in blocks]


def test_run_ner_end_to_end(ner_runs):
    """Trains 80 steps with every path on a bucket, evaluates with seqeval's entity F1,
    predicts, exports; a second run to 84 steps resumes from the bucket's step-80 checkpoint."""
    seqeval = pytest.importorskip("seqeval.metrics")
    r, folder = ner_runs
    for case in r["cases"][:2]:
        assert_ok(case)
    out = folder / "out"
    assert json.loads((out / "labels.json").read_text()) == {
        "labels": ["O", "B-LOC", "B-PER", "I-PER"],
        "scheme": "BIO",
    }
    results = dict(
        line.split(" = ")
        for line in (out / "eval_results.txt").read_text().splitlines()
        if " = " in line
    )
    assert float(results["f1"]) > 0.5, results  # learnable: names and places from fixed lists
    # test_predictions.txt: `word gold predicted`; its metrics are seqeval's
    sentences = _predictions(out / "test_predictions.txt")
    gold = [[g for _, g, _ in s] for s in sentences]
    pred = [[p for _, _, p in s] for s in sentences]
    assert len(sentences) == 12
    test = dict(line.split(" = ") for line in (out / "test_results.txt").read_text().splitlines())
    assert float(test["f1"]) == pytest.approx(seqeval.f1_score(gold, pred), abs=1e-12)
    _check_export(folder / "export", sentences)
    # the bucket: the resumed run did not train or evaluate steps 40 and 80 again
    tree = r["trees"][f"{B}/ner-out"]
    assert checkpoint_steps(tree) == [40, 80, 84] and {
        "labels.json",
        "test_predictions.txt",
        "model.ckpt-best.index",
    } <= set(tree)
    assert history_steps(r["texts"][f"{B}/ner-out/eval_history.json"]) == [40, 80, 84]
    assert any(f.endswith("/saved_model.pb") for f in r["trees"][f"{B}/export"])


@pytest.mark.parametrize("index", range(len(BAD_FILES)))
def test_bad_ner_files_are_one_line(ner_runs, index):
    r, folder = ner_runs
    case, (_, _, message) = r["cases"][3 + index], BAD_FILES[index]
    last = case["stderr"].strip().splitlines()[-1]
    assert case["code"] == 2 and last.startswith("error: ") and message in last, case["stderr"]
    out = folder / f"bad{index}-out"
    assert not out.exists() or not any(out.iterdir())


def test_a_missing_train_file_is_one_line_in_a_real_process(fixtures_dir, tmp_path):
    """The real exit of `python run_ner.py` on bad input: code 2, one error line, nothing
    written (the other bad files run in the shared process)."""
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    (data / "dev.txt").write_text("Oslo O\n")
    r = subprocess.run(
        [sys.executable, str(ROOT / "run_ner.py"), *_bad_case(fixtures_dir, data, out, True)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    last = r.stderr.strip().splitlines()[-1]
    message = f"--do_train: no train file: --data_dir {data} has no train.txt"
    assert r.returncode == 2 and last.startswith("error: ") and message in last, r.stderr[-2000:]
    assert not out.exists() or not any(out.iterdir())


def test_run_ner_chinese_characters_with_a_wordpiece_vocabulary(ner_runs):
    """Chinese NER as MSRA / People's Daily ship it (a character per line), from a
    brightmart/albert_zh checkpoint with its vocab.txt: trains, predicts, and the export
    (WordPiece in the graph) labels each character as the Python path did."""
    r, folder = ner_runs
    assert_ok(r["cases"][2])
    _check_export(folder / "zh-export", _predictions(folder / "zh-out" / "test_predictions.txt"))
