"""LiteRT files that take strings: their tokenizer (tf-text's LiteRT ops on a SentencePiece
model that preprocesses itself, Google's comma fix-up in the graph; WordPiece with tf-text's
normalizer) against the Python path, and converted files against Keras on the Python path's
features, run with ai-edge-litert and tf-text's op registerers."""

import csv

from deploy_helpers import CONFIG, SPM, WORDPIECE_VOCAB
import numpy as np
import pytest
from repo_paths import DATA, FIXTURES
import tensorflow as tf

import albert_tf
from albert_tf import export_litert, load_litert
from albert_tf.deploy.text_input import SentencePieceIds
from albert_tf.text.encoding import TextEncoder
from albert_tf.text.packing import pack_ids
from albert_tf.text.spm_train import USER_DEFINED_SYMBOLS, train_sentencepiece

TRICKY = [
    "Hello,   WORLD!\tTabs\nand newlines",
    "Café naïve résumé ÉCOLE Zürich",
    "Ｆｕｌｌ width ＡＢＣ and ﬁ ligatures",
    "In 1990, 2000, and 12, things happened; 3,000 of them.",
    "",
    "   leading and trailing   ",
]


def _column(path, name, limit):
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [row[name] for row, _ in zip(rows, range(limit))]


def _google_ids(encoder, text):
    return encoder.ids(text)


@pytest.fixture(scope="module")
def comma_model(tmp_path_factory):
    """A SentencePiece model with digit+"," pieces (Google's releases have many), so the
    fix-up fires: trained on the fixture corpus with such pieces as user symbols."""
    folder = tmp_path_factory.mktemp("spm")
    corpus = folder / "corpus.txt"
    lines = (FIXTURES / "corpus.txt").read_text(encoding="utf-8").splitlines()[:400]
    corpus.write_text("\n".join(lines + TRICKY) + "\n", encoding="utf-8")
    symbols = list(USER_DEFINED_SYMBOLS) + ["1990,", "12,", "2000,"]
    return train_sentencepiece(corpus, str(folder / "m"), 400, user_defined_symbols=symbols)


@pytest.mark.parametrize("model", ["fixture", "comma"])
def test_string_input_sentencepiece_ids_equal_the_python_path(model, comma_model):
    spm_file = str(SPM) if model == "fixture" else comma_model
    encoder = TextEncoder.from_files(spm_file, None, True)
    graph = SentencePieceIds(open(spm_file, "rb").read())
    texts = TRICKY + _column(DATA / "SST-2" / "dev.tsv", "sentence", 50)
    got = [graph(tf.constant([t])).numpy().tolist() for t in texts]
    want = [_google_ids(encoder, t) for t in texts]
    assert [t for t, g, w in zip(texts, got, want) if g != w] == []
    if model == "comma":  # the fix-up ran: Google's pieces split "1990," into "1990" and ","
        assert graph.fix_table is not None


def test_string_input_pair_classifier_file_equals_the_python_path(tmp_path):
    model = albert_tf.AlbertClassifier(CONFIG, 2)
    length = 24  # short: most pairs are cut with Google's pop-from-the-longer truncation
    out = export_litert(
        model,
        tmp_path / "t.tflite",
        max_seq_length=length,
        spm_model_file=SPM,
        text_input=True,
        text_pair=True,
    )
    assert sorted(out.inputs) == ["text_a", "text_b"]
    assert [op for op in out.operators if op.startswith("CUSTOM")] == [
        "CUSTOM:TFText>FastSentencepieceTokenize"
    ]
    lite = load_litert(out.path)
    encoder = TextEncoder.from_files(str(SPM), None, True)
    pairs = list(
        zip(*(_column(DATA / "MRPC" / "dev.tsv", c, 6) for c in ("#1 String", "#2 String")))
    )
    pairs += [(TRICKY[1], TRICKY[3]), ("short", "a much longer second text " * 4)]
    for a, b in pairs:
        feats = pack_ids(encoder.ids(a), encoder.ids(b), length, encoder.cls_id, encoder.sep_id)
        feats = {k: np.array([v], np.int32) for k, v in feats.items()}
        want = model(feats, training=False)["probabilities"].numpy()
        got = lite(text_a=np.array([a]), text_b=np.array([b]))["probabilities"]
        np.testing.assert_allclose(got, want, atol=1e-5, err_msg=f"{a!r} / {b!r}")


def test_string_input_wordpiece_encoder_file(tmp_path):
    """Google's Chinese WordPiece path: equal to the Python path where tf-text's normalizer
    gives the same ids (docs/deployment.md: it folds full-width forms, BERT's does not)."""
    import json

    model = albert_tf.AlbertModel(CONFIG)
    out = export_litert(
        model,
        tmp_path / "zh.tflite",
        max_seq_length=32,
        vocab_file=WORDPIECE_VOCAB,
        text_input=True,
    )
    # tf-text's LiteRT ops (tensorflow_text.tflite_registrar registers both)
    assert {"CUSTOM:FastBertNormalize", "CUSTOM:FastWordpieceTokenizeWithOffsets"} <= set(
        out.operators
    )
    lite = load_litert(out.path)
    encoder = TextEncoder.from_files(None, str(WORDPIECE_VOCAB), True)
    cases = [
        json.loads(line) for line in open(FIXTURES / "albert_zh" / "wordpiece_tokenization.jsonl")
    ]
    same = 0
    for case in cases:
        feats = pack_ids(encoder.ids(case["text"]), None, 32, encoder.cls_id, encoder.sep_id)
        feats = {k: np.array([v], np.int32) for k, v in feats.items()}
        want = model(feats, training=False)["pooled_output"].numpy()
        got = lite(text=np.array([case["text"]]))["pooled_output"]
        same += bool(np.allclose(got, want, atol=1e-5))
    assert same >= 29, same  # 29 of the fixture's 40 hard cases (measured; docs/deployment.md)
