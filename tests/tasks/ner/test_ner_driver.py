"""run_ner.py end to end on CoNLL-style files: trains, evaluates with seqeval's entity F1,
writes a label per word, exports a SavedModel that labels raw text as the Python path does;
bad NER input is one line with exit code 2."""

import json
import pathlib
import random
import sys

import pytest
import python_processes

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


@pytest.fixture(scope="module")
def ner_data(tmp_path_factory):
    rng = random.Random(0)
    folder = tmp_path_factory.mktemp("ner")
    _write(folder / "train.txt", [_sentence(rng) for _ in range(64)], columns=4)
    _write(folder / "dev.txt", [_sentence(rng) for _ in range(12)])
    _write(folder / "test.txt", [_sentence(rng) for _ in range(12)])
    return folder


def _cmd(fixtures_dir, data, out, *extra):
    tiny = fixtures_dir / "albert_tiny"
    return [
        sys.executable,
        str(ROOT / "run_ner.py"),
        f"--data_dir={data}",
        f"--albert_config_file={tiny / 'albert_config.json'}",
        f"--init_checkpoint={tiny / 'model.ckpt-best'}",
        f"--spm_model_file={tiny / '30k-clean.model'}",
        f"--output_dir={out}",
        "--max_seq_length=32",
        "--train_batch_size=8",
        "--eval_batch_size=8",
        "--predict_batch_size=8",
        "--learning_rate=1e-3",
        *extra,
    ]


def test_run_ner_end_to_end(fixtures_dir, ner_data, tmp_path):
    seqeval = pytest.importorskip("seqeval.metrics")
    out, export = tmp_path / "out", tmp_path / "export"
    r = python_processes.run(
        _cmd(
            fixtures_dir,
            ner_data,
            out,
            "--train_step=80",
            "--warmup_step=8",
            "--save_checkpoints_steps=80",
            "--do_train",
            "--do_eval",
            "--do_predict",
            f"--export_dir={export}",
        ),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-3000:]
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
    rows = (out / "test_predictions.txt").read_text().split("\n\n")
    sentences = [[line.split() for line in block.splitlines()] for block in rows if block.strip()]
    gold = [[g for _, g, _ in s] for s in sentences]
    pred = [[p for _, _, p in s] for s in sentences]
    assert len(sentences) == 12
    test = dict(line.split(" = ") for line in (out / "test_results.txt").read_text().splitlines())
    assert float(test["f1"]) == pytest.approx(seqeval.f1_score(gold, pred), abs=1e-12)
    # the raw-text export labels each word as the Python path did
    import tensorflow as tf

    from albert_tf import load_saved_model

    serve = load_saved_model(export).signatures["serving_default"]
    got = serve(text=tf.constant([" ".join(w for w, _, _ in s) for s in sentences]))
    for s, labels, n in zip(sentences, got["labels"].numpy(), got["num_words"].numpy()):
        assert [x.decode() for x in labels[:n]] == [p for _, _, p in s]


@pytest.mark.parametrize(
    "content, dev, message",
    [
        ("Ada B-PER\nsang O O\n", None, "train.txt, line 2: 3 columns"),
        ("Ada O\nLovelace I-PER\n", None, "train.txt, line 2: \"I-PER\" follows \"O\""),
        (
            "Ada B-PER\nsang O\n",
            "Oslo O\nis O\nfine O\nNorway B-LOC\n",
            "dev.txt, line 4: label 'B-LOC' is not in the label set ['O', 'B-PER']",
        ),
        (None, "Oslo O\n", "--do_train: no train file: --data_dir {data} has no train.txt"),
    ],
)
def test_bad_ner_files_are_one_line(fixtures_dir, tmp_path, content, dev, message):
    data = tmp_path / "data"
    data.mkdir()
    if content is not None:
        (data / "train.txt").write_text(content)
    message = message.format(data=data)
    if dev:
        (data / "dev.txt").write_text(dev)
    out = tmp_path / "out"
    r = python_processes.run(
        _cmd(
            fixtures_dir,
            data,
            out,
            "--train_step=2",
            "--warmup_step=0",
            "--do_train",
            *(["--do_eval"] if dev else []),
        ),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 2 and last.startswith("error: ") and message in last, r.stderr[-2000:]
    assert not out.exists() or not any(out.iterdir())


def test_run_ner_chinese_characters_with_a_wordpiece_vocabulary(fixtures_dir, tmp_path):
    """Chinese NER as MSRA / People's Daily ship it (a character per line), from a
    brightmart/albert_zh checkpoint with its vocab.txt: trains, predicts, and the export
    (WordPiece in the graph) labels each character as the Python path did."""
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

    data = tmp_path / "data"
    data.mkdir()
    for split, n in (("train", 16), ("dev", 4), ("test", 4)):
        _write(data / f"{split}.txt", [sentence() for _ in range(n)])
    release, out = fixtures_dir / "albert_zh" / "albert_zh_tiny", tmp_path / "out"
    cmd = [
        sys.executable,
        str(ROOT / "run_ner.py"),
        f"--data_dir={data}",
        f"--albert_config_file={release / 'albert_config.json'}",
        f"--init_checkpoint={release}",
        f"--vocab_file={release / 'vocab.txt'}",
        f"--output_dir={out}",
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
        f"--export_dir={tmp_path / 'export'}",
    ]
    r = python_processes.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    blocks = [
        b
        for b in (out / "test_predictions.txt").read_text(encoding="utf-8").split("\n\n")
        if b.strip()
    ]
    sentences = [[line.split() for line in b.splitlines()] for b in blocks]
    import tensorflow as tf

    from albert_tf import load_saved_model

    serve = load_saved_model(tmp_path / "export").signatures["serving_default"]
    got = serve(text=tf.constant([" ".join(w for w, _, _ in s) for s in sentences]))
    for s, labels, n in zip(sentences, got["labels"].numpy(), got["num_words"].numpy()):
        assert [x.decode() for x in labels[:n]] == [p for _, _, p in s]
