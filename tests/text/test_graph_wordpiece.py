"""The in-graph WordPiece tokenizer (Google's Chinese releases) equals the Python FullTokenizer
(vocab_file): BERT's basic tokens on every codepoint, ids on mixed Chinese / English / digits /
punctuation / full-width text, both casings, and inside a .keras file."""

import random

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.text.graph_tokenizer import GraphTokenizerLayer, make_graph_tokenizer
from albert_tf.text.graph_wordpiece import MAX_WORD_CHARS, GraphWordPieceTokenizer
from albert_tf.text.tokenization import FullTokenizer

WORDS = (
    "hello world the cat sat on mat über cafe naive ａｂｃ ＡＢＣ 中 文 字 我 们 的 是 一 "
    "run ##s ##ing ##ed ##n 123 ##4 5 ， 。 ！ ？ （ ） ( ) - ' \" σας σ ς i̇stanbul ß"
).split()


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    words = sorted(set(WORDS) | {"##" + w for w in WORDS if not w.startswith("##")})
    path = tmp_path_factory.mktemp("wp") / "vocab.txt"
    path.write_text(
        "".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words),
        encoding="utf-8",
    )
    return str(path)


def _random_texts(seed, n=1500):
    rng = random.Random(seed)
    alphabet = list(
        "abcdeABCDE üÜéÉïßΣσςİǅ中文字我们的是一，。！？()-'\"\t\n\r\x00\x0b\x0c\x85"
        "\u2028\u2029\u3000\xa0\ufffd\u200b\u0301\u0308ＡＢａｂ１２3456789ᾼΆ"
    )
    alphabet += ["\U00020000", "\U0002f800", "\uf900", "\U000e0001", "\u1e9e", "ΣΣ", "run", "s"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(n)]


@pytest.mark.parametrize("lower", [True, False])
def test_basic_tokens_equal_python_on_every_codepoint(vocab, lower):
    """chr(c) + "a" + chr(c) words over planes 0-2: control, whitespace, punctuation, CJK,
    nonspacing marks and Unicode-version skew between TF's ICU and Python all meet here."""
    py = FullTokenizer(vocab_file=vocab, do_lower_case=lower)
    graph = GraphWordPieceTokenizer(vocab, do_lower_case=lower)
    texts = [
        " ".join(
            chr(c) + "a" + chr(c)
            for c in range(s, min(s + 500, 0x30000))
            if not 0xD800 <= c <= 0xDFFF
        )
        for s in range(0, 0x30000, 500)
    ]
    texts += _random_texts(1)
    got = graph.words(tf.constant(texts)).to_list()
    bad = [
        t
        for t, g in zip(texts, got)
        if py.basic_tokenizer.tokenize(t) != [w.decode("utf-8") for w in g]
    ]
    assert bad == []


@pytest.mark.parametrize("lower", [True, False])
def test_ids_equal_python(vocab, lower):
    py = FullTokenizer(vocab_file=vocab, do_lower_case=lower)
    graph = make_graph_tokenizer(vocab_file=vocab, do_lower_case=lower)
    assert isinstance(graph, GraphWordPieceTokenizer)
    texts = _random_texts(0) + [
        "hello world",
        "Über Café NAÏVE",
        "ＡＢＣ ａｂｃ",
        "runned runs running",
        "ΣΑΣ σας",
        "İstanbul",
        "我们的中文，是一！",
        "a" * MAX_WORD_CHARS,
        "a" * (MAX_WORD_CHARS + 1),
        "中" * 300,
        "é" * (MAX_WORD_CHARS + 1),
        "",
        "   ",
        b"\xff\xfeinvalid utf-8 run",
    ]
    got = graph.tokenize(tf.constant(texts)).to_list()
    for text, ids in zip(texts, got):
        assert ids == py.convert_tokens_to_ids(py.tokenize(text)), repr(text)
    assert (
        graph.tokenize(tf.constant("hello world")).numpy().tolist()
        == got[texts.index("hello world")]
    )
    assert (graph.cls_id, graph.sep_id, graph.pad_id, graph.vocab_size) == (2, 3, 0, py.vocab_size)


def test_packed_features_and_keras_file_round_trip(vocab, tmp_path):
    import shutil

    import keras

    copy = shutil.copy(vocab, tmp_path / "vocab.txt")
    layer = GraphTokenizerLayer(vocab_file=copy, max_seq_length=12, name="packed")
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, layer(inputs))
    texts = tf.constant(["我们的中文", "hello runs，world"])
    want = model(texts)
    py = FullTokenizer(vocab_file=vocab)
    ids = [
        [2] + py.convert_tokens_to_ids(py.tokenize(t)) + [3]
        for t in ["我们的中文", "hello runs，world"]
    ]
    np.testing.assert_array_equal(want["input_ids"].numpy(), [i + [0] * (12 - len(i)) for i in ids])
    model.save(tmp_path / "m.keras")
    (tmp_path / "vocab.txt").unlink()  # the vocabulary travels inside the file
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    for k, v in loaded(texts).items():
        np.testing.assert_array_equal(v.numpy(), want[k].numpy())


def test_python_and_graph_equal_googles_fulltokenizer(fixtures_dir):
    """tests/data/fixtures/albert_zh/wordpiece_tokenization.jsonl: Google's own FullTokenizer
    (albert-tensorflow 1.1, vocab_file mode) on mixed Chinese / English / digits / punctuation /
    full-width / accented / control text, lowercased and cased."""
    import json

    folder = fixtures_dir / "albert_zh"
    cases = [
        json.loads(line)
        for line in (folder / "wordpiece_tokenization.jsonl").open(encoding="utf-8")
    ]
    assert len(cases) == 40
    texts = [c["text"] for c in cases]
    for lower, suffix in ((True, ""), (False, "_cased")):
        py = FullTokenizer(vocab_file=folder / "vocab.txt", do_lower_case=lower)
        graph = GraphWordPieceTokenizer(str(folder / "vocab.txt"), do_lower_case=lower)
        got = graph.tokenize(tf.constant(texts)).to_list()
        for case, ids in zip(cases, got):
            assert py.tokenize(case["text"]) == case["tokens" + suffix], case["text"]
            assert ids == case["ids" + suffix], case["text"]
