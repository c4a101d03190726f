"""GraphTokenizer: same ids as FullTokenizer (the reference) on the shared cases and beyond."""

import json
import random
import unicodedata

import numpy as np
import pytest
from repo_paths import FIXTURES
import tensorflow as tf
from test_tokenization import comma_model

from albert_tf.text import graph_text
from albert_tf.text.graph_text import overrides
from albert_tf.text.graph_tokenizer import GraphTokenizer, GraphTokenizerLayer
from albert_tf.text.normalization import preprocess_text
from albert_tf.text.tokenization import FullTokenizer

CASES = [json.loads(line) for line in open(FIXTURES / "tokenization.jsonl", encoding="utf-8")]
MODEL = str(FIXTURES / "spm.model")
# Cases of tokenization.jsonl that cannot match in-graph (see docs/tokenization.md): none.
DOCUMENTED_EXCEPTIONS = set()


@pytest.fixture(scope="module")
def graph():
    return GraphTokenizer(MODEL)


@pytest.fixture(scope="module")
def graph_raw():
    return GraphTokenizer(MODEL, preprocess=False)


@pytest.fixture(scope="module")
def py():
    return FullTokenizer(spm_model_file=MODEL)


def _decode(t):
    return [x.decode("utf-8") for x in t.numpy()]


def test_all_fixture_cases(graph, graph_raw):
    texts = tf.constant([c["text"] for c in CASES])
    pre = _decode(graph.preprocess_text(texts))
    ids = graph(texts).to_list()
    raw = graph_raw(texts).to_list()
    failed = {
        i
        for i, c in enumerate(CASES)
        if pre[i] != c["preprocessed"] or ids[i] != c["ids"] or raw[i] != c["raw_ids"]
    }
    assert len(CASES) == 40
    assert failed == DOCUMENTED_EXCEPTIONS


def test_scalar_and_empty_inputs(graph):
    assert graph.tokenize("Hello world.").numpy().tolist() == CASES[0]["ids"]
    empty = graph(tf.constant([], tf.string))
    assert empty.shape[0] == 0
    assert graph(tf.constant(["", "   "])).to_list() == [[], []]


def test_corpus_and_fuzz_agree_with_python(graph, graph_raw, py):
    lines = (FIXTURES / "corpus.txt").read_text(encoding="utf-8").split("\n")
    rng = random.Random(3)
    alphabet = (
        list("abcXYZ0123456789,.-()\"' \t\n\r\x00\x0b\x85\xa0\u3000\u2028")
        + [
            "É",
            "ß",
            "İ",
            "Σ",
            "ﬁ",
            "①",
            "😀",
            "中",
            "\u0301",
            "\u0e31",
            "\u2c2f",
            "\U000105c9",
            "\U00011383",
        ]
        + [chr(rng.randrange(0x20, 0x3000)) for _ in range(200)]
    )
    fuzz = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))) for _ in range(3000)]
    for texts in (lines, fuzz):
        want = [py.encode(preprocess_text(t, lower=True)) for t in texts]
        assert graph(tf.constant(texts)).to_list() == want
        assert graph_raw(tf.constant(texts)).to_list() == [py.encode(t) for t in texts]


def test_invalid_utf8_dropped_like_python(graph, py):
    rng = random.Random(9)
    raw = [
        bytes(
            rng.randrange(256) if rng.random() < 0.3 else rng.randrange(0x61, 0x7B)
            for _ in range(rng.randrange(30))
        )
        for _ in range(500)
    ]
    want = [py.encode(preprocess_text(b, lower=True)) for b in raw]
    assert graph(tf.constant(raw)).to_list() == want


def test_preprocess_every_codepoint_like_python(graph):
    cps = [c for c in range(0x40000) if not 0xD800 <= c <= 0xDFFF]
    cps += list(range(0xE0000, 0xE0200))
    chars = [chr(c) for c in cps]
    got = graph.preprocess_text(tf.constant([f"A{ch}B" for ch in chars])).numpy()
    want = [preprocess_text(f"A{ch}B", lower=True).encode("utf-8") for ch in chars]
    bad = [hex(c) for c, g, w in zip(cps, got, want) if g != w]
    assert bad == []


@pytest.mark.parametrize(
    "remove_space,lower", [(True, True), (True, False), (False, True), (False, False)]
)
def test_preprocess_fast_paths_equal_the_unicode_path(remove_space, lower):
    """The ASCII fast paths give what every step gives, and clean ASCII takes the fastest."""
    g = GraphTokenizer(MODEL, do_lower_case=lower, remove_space=remove_space)
    clean = ["", "Hello World.", "a", "x\x00Y\x7f,1", "In 2019, the model was released."]
    ascii_other = [" a", "a ", "a  b", "a\tb", "A\x1cB", "\n", "  ", " \x1f X\r\n"]
    other = ["Café  déjà", "é", "\u00a0a", "ß İ Σ", "ｆｕｌｌ", "x\u3000y ", "\x00É"]
    invalid = [b"ab\xffC", b"\xc3", b" \x80 a"]
    texts = clean + ascii_other + other + invalid
    strings = tf.constant(texts)
    got = g.preprocess_text(strings).numpy().tolist()
    assert got == g._preprocess_unicode(strings).numpy().tolist()
    assert got == [
        preprocess_text(t, remove_space=remove_space, lower=lower).encode("utf-8") for t in texts
    ]
    fast = graph_text.matches_pattern(strings, g._clean_re).numpy().tolist()
    n_fast = len(clean) + (0 if remove_space else len(ascii_other))
    assert fast == [True] * n_fast + [False] * (len(texts) - n_fast)
    nested = tf.constant([texts[:4], texts[-4:]])  # any rank keeps its shape
    assert g.preprocess_text(nested).numpy().tolist() == [got[:4], got[-4:]]
    assert g.preprocess_text(tf.constant(texts[5])).numpy() == got[5]


def test_override_tables_cover_version_skew():
    nfkd, lower = overrides("nfkd"), overrides("lower")
    assert "\x00" in lower  # tf.strings.lower truncates at NUL
    for ch, value in nfkd.items():
        assert value == unicodedata.normalize("NFKD", ch)
    for ch, value in lower.items():
        assert value == ch.lower()


def test_comma_fixup_in_graph(tmp_path):
    path = comma_model(tmp_path / "c.model")
    py = FullTokenizer(spm_model_file=path)
    g = GraphTokenizer(path, preprocess=False)
    text = "in 19, x2, 2,"
    assert g.tokenize(text).numpy().tolist() == py.encode(text)
    assert py.convert_ids_to_tokens(py.encode(text)) == [
        "\u2581in",
        "\u258119",
        ",",
        "\u2581",
        "x",
        "\u25812",
        ",",
        "\u25812",
        ",",
    ]
    rng = random.Random(1)
    alphabet = list("0123456789,, ab.x") + ["19,", "2,", "100,", "H"]
    texts = [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 25))) for _ in range(2000)
    ]
    assert g(tf.constant(texts)).to_list() == [py.encode(t) for t in texts]


def test_packed_features_match_python_packing(graph, py):
    from albert_tf.text.packing import pack_ids

    a = [c["text"] for c in CASES]
    b = list(reversed(a))
    out = graph.encode(tf.constant(a), tf.constant(b), max_seq_length=24)
    for i in range(len(a)):
        want = pack_ids(
            py.encode(preprocess_text(a[i], lower=True)),
            py.encode(preprocess_text(b[i], lower=True)),
            24,
            py.cls_id,
            py.sep_id,
        )
        for key, value in want.items():
            assert out[key][i].numpy().tolist() == value


def test_tf_data_and_saved_model(graph, tmp_path):
    texts = [c["text"] for c in CASES[:8]]
    ds = tf.data.Dataset.from_tensor_slices(texts).map(graph.tokenize)
    assert [x.numpy().tolist() for x in ds] == [c["ids"] for c in CASES[:8]]
    module = tf.Module()
    module.tokenizer = graph
    module.serve = graph.serving_function(max_seq_length=32)
    tf.saved_model.save(module, str(tmp_path / "sm"), signatures={"serving_default": module.serve})
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    got = loaded.signatures["serving_default"](tf.constant(texts))
    want = graph.encode(tf.constant(texts), None, 32)
    np.testing.assert_array_equal(got["input_ids"].numpy(), want["input_ids"].numpy())
    assert got["input_ids"][0, :10].numpy().tolist() == [2] + CASES[0]["ids"] + [3]


def test_keras_layer():
    layer = GraphTokenizerLayer(MODEL, max_seq_length=16)
    out = layer(tf.constant(["Hello world.", "In 2019, the model was released."]))
    assert out["input_ids"].shape == (2, 16)
    assert out["input_ids"][0, :10].numpy().tolist() == [2] + CASES[0]["ids"] + [3]
    assert GraphTokenizerLayer(MODEL)(tf.constant(["Hello world."])).to_list() == [CASES[0]["ids"]]
    assert layer.get_config()["max_seq_length"] == 16


def test_sampling_in_graph(py):
    g = GraphTokenizer(MODEL, sample=True)
    text = "the quick brown fox jumps over the lazy dog"
    seen = set()
    for _ in range(20):
        ids = g.tokenize(text).numpy().tolist()
        assert "".join(py.convert_ids_to_tokens(ids)).replace("\u2581", " ").strip() == text
        seen.add(tuple(ids))
    assert len(seen) > 1


def test_keras_layer_reloads_with_its_own_model(graph, tmp_path):
    import shutil

    import keras

    (tmp_path / "a").mkdir()
    spm = shutil.copy(MODEL, tmp_path / "a" / "spm.model")
    text = keras.Input(shape=(), dtype="string")
    packed = GraphTokenizerLayer(spm, max_seq_length=24, name="packed")(text)
    cased = GraphTokenizerLayer(spm, do_lower_case=False, name="cased")(text)
    model = keras.Model(text, {**packed, "cased_ids": cased})
    texts = tf.constant([c["text"] for c in CASES])
    want = model(texts)
    model.save(tmp_path / "a" / "m.keras")
    (tmp_path / "b").mkdir()
    shutil.move(tmp_path / "a" / "m.keras", tmp_path / "b" / "m.keras")
    shutil.rmtree(tmp_path / "a")  # the original SentencePiece file is gone
    loaded = keras.models.load_model(tmp_path / "b" / "m.keras")
    assert str(tmp_path) not in json.dumps(loaded.get_layer("packed").get_config())
    got = loaded(texts)
    for key in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(got[key].numpy(), want[key].numpy())
    assert got["cased_ids"].to_list() == want["cased_ids"].to_list()
    np.testing.assert_array_equal(got["input_ids"], graph.encode(texts, None, 24)["input_ids"])
    cased = GraphTokenizer(MODEL, do_lower_case=False)(texts).to_list()
    assert got["cased_ids"].to_list() == cased != graph(texts).to_list()
    with pytest.raises(ValueError, match="has no tokenizer"):
        GraphTokenizerLayer.from_config(loaded.get_layer("packed").get_config())(texts)
