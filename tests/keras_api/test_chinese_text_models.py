"""The Keras text models on a Chinese WordPiece release (brightmart/albert_zh's layout, its
vocab.txt, no SentencePiece model): from_pretrained finds the vocabulary, raw strings give the
Python path's logits, spans come back as characters of the context, .keras files carry the
vocabulary; extract_features reads the same folder."""

import numpy as np
import pytest

from albert_tf import (
    AlbertConfig,
    AlbertTextClassifier,
    AlbertTextSpanExtractor,
    extract_features,
    load_model,
)
from albert_tf.text.encoding import TextEncoder

TEXTS = ["我们的中文很好。", "ALBERT在中文上有很好的结果！", "北京是中国的首都，１９９８年。"]


@pytest.fixture(scope="module")
def release(fixtures_dir):
    return fixtures_dir / "albert_zh" / "albert_zh_tiny"


def test_classifier_on_a_wordpiece_release(release, tmp_path):
    model = AlbertTextClassifier.from_pretrained(release, num_labels=3, sequence_length=24)
    got = model.predict(TEXTS, verbose=0)["logits"]
    # the Python path: Google's FullTokenizer(vocab_file) ids, packed, through the same model
    encoder = TextEncoder.from_files(vocab_file=release / "vocab.txt")
    ids = [[encoder.cls_id] + encoder.ids(t) + [encoder.sep_id] for t in TEXTS]
    feats = {
        "input_ids": np.array([i + [0] * (24 - len(i)) for i in ids], np.int32),
        "input_mask": np.array([[1] * len(i) + [0] * (24 - len(i)) for i in ids], np.int32),
        "segment_ids": np.zeros((3, 24), np.int32),
    }
    np.testing.assert_allclose(got, model(feats, training=False)["logits"], atol=1e-5)
    # the encoder is brightmart's checkpoint, folded: equal to loading it directly
    config = AlbertConfig.from_json_file(release / "albert_config.json")
    assert model.albert.config.embedding_size == config.hidden_size
    model.save(tmp_path / "zh.keras")
    loaded = load_model(tmp_path / "zh.keras")
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0)["logits"], got, atol=1e-6)


def test_span_extractor_on_a_wordpiece_release(release):
    model = AlbertTextSpanExtractor.from_pretrained(
        release, sequence_length=48, max_query_length=16
    )
    contexts = [
        "北京是中国的首都，也是一个有三千多年历史的城市。",
        "ＡＬＢＥＲＴ是2019年发表的模型。",
    ]
    out = model.predict(
        {"question": ["中国的首都是哪里？", "哪一年？"], "context": contexts}, verbose=0
    )
    for context, text, start, end in zip(
        contexts, out["answer_text"], out["answer_start"], out["answer_end"]
    ):
        assert start >= 0 and context[start:end].strip() == text and text


def test_extract_features_on_a_wordpiece_release(release, tmp_path):
    (tmp_path / "in.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    assert (
        extract_features.main(
            [
                f"--input_file={tmp_path / 'in.txt'}",
                f"--model_dir={release}",
                f"--output_file={tmp_path / 'f.npz'}",
                "--layers=-1",
                "--max_seq_length=24",
            ]
        )
        == 0
    )
    encoder = TextEncoder.from_files(vocab_file=release / "vocab.txt")
    with np.load(tmp_path / "f.npz") as f:
        assert f["features"].shape == (3, 1, 24, 32)
        for row, text in zip(f["input_ids"], TEXTS):  # Google's WordPiece ids
            ids = [encoder.cls_id] + encoder.ids(text) + [encoder.sep_id]
            assert row.tolist() == ids + [0] * (24 - len(ids))


def test_fill_mask_with_a_wordpiece_vocabulary(release):
    """fill_mask on a brightmart release folder (its vocab.txt) and on a model with vocab_file=:
    the MLM head's top pieces, named in the WordPiece vocabulary."""
    from albert_tf import fill_mask
    from albert_tf.inference.representations import load_pretrained

    top = fill_mask(str(release), "北京是中国的[MASK]都。", top_k=3)
    model, _ = load_pretrained(release)
    again = fill_mask(model, "北京是中国的[MASK]都。", top_k=3, vocab_file=release / "vocab.txt")
    assert top == again and len(top) == 3
    vocab = (release / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert all(vocab[t["id"]] == t["token"] for t in top)
    assert top[0]["score"] >= top[1]["score"] >= top[2]["score"]
