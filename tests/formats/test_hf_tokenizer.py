"""The Hugging Face export's tokenizer.json (albert_tf/formats/hf_tokenizer.py): the same ids as
albert_tf's tokenizer (Google's) on the data samples and fixture strings, the designed and the
known differences, and transformers loading it without sentencepiece's converter."""

import json

import pytest
from repo_paths import DATA, FIXTURES
from sentencepiece import sentencepiece_model_pb2

from albert_tf.formats.hf_tokenizer import tokenizer_from_spm
from albert_tf.text.normalization import preprocess_text
from albert_tf.text.tokenization import FullTokenizer

SPM = FIXTURES / "spm.model"
SPECIAL_TEXTS = {  # control symbols written in the text are special tokens there, by design
    "[CLS] [SEP] [MASK] are control symbols.",
    "<unk> <pad> look like special tokens.",
}


def _google(spm):
    tok = FullTokenizer(spm_model_file=spm)
    return lambda t: tok.convert_tokens_to_ids(tok.tokenize(preprocess_text(t, lower=True)))


def _texts():
    texts = [json.loads(line)["text"] for line in (FIXTURES / "tokenization.jsonl").open()]
    for path in sorted(DATA.glob("*/*.tsv")):
        for line in path.read_text(encoding="utf-8-sig").splitlines():
            texts += [c for c in line.split("\t") if any(ch.isalpha() for ch in c)]
    for path in sorted(DATA.glob("squad/*/*.json")):
        for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
            for p in article["paragraphs"]:
                texts += [p["context"]] + [q["question"] for q in p["qas"]]
    return list(dict.fromkeys(texts))


def test_tokenizer_json_gives_albert_tf_ids():
    google, tok = _google(SPM), tokenizer_from_spm(SPM)
    texts = _texts()
    ours = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    differing = {t for t, a in zip(texts, ours) if a != google(t)}
    assert len(texts) > 2500 and differing == SPECIAL_TEXTS
    pair = tok.encode("Hello there", "second text")
    assert pair.ids == [2] + google("Hello there") + [3] + google("second text") + [3]
    assert pair.type_ids == [0] * (len(google("Hello there")) + 2) + [1] * (
        len(google("second text")) + 1
    )


def test_google_comma_fixup_differs_only_inside_a_word(tmp_path):
    """A vocabulary with digit+"," pieces (as 30k-clean.model has): Google's tokenizer splits
    such a piece and re-encodes its digits, which adds a "▁" (encode_pieces' effective
    behaviour); the Unigram model never picks the piece instead. Same ids at a word start,
    one "▁" fewer inside a word."""
    proto = sentencepiece_model_pb2.ModelProto.FromString(SPM.read_bytes())
    for piece in ("▁1,", "0,"):
        added = proto.pieces.add()
        added.piece, added.score, added.type = piece, -2.0, 1
    spm = tmp_path / "comma.model"
    spm.write_bytes(proto.SerializeToString())
    google, tok = FullTokenizer(spm_model_file=spm), tokenizer_from_spm(spm)

    def both(text):
        pieces = google.tokenize(preprocess_text(text, lower=True))
        return pieces, tok.encode(text, add_special_tokens=False).tokens

    ours, theirs = both("a 1, b")
    assert ours == theirs == ["▁a", "▁", "1", ",", "▁", "b"]
    ours, theirs = both("in 1870, it")
    assert ours[-5:] == ["7", "▁", "0", ",", "▁it"] and theirs[-4:] == ["7", "0", ",", "▁it"]
    assert [p for p in ours if p != "▁"] == [p for p in theirs if p != "▁"]


def test_transformers_loads_the_export_with_its_tokenizer_json(tmp_path, tiny_pretrainer):
    transformers = pytest.importorskip("transformers")
    from albert_tf import export_huggingface

    export_huggingface(tiny_pretrainer.albert, tmp_path, SPM)
    assert json.loads((tmp_path / "tokenizer.json").read_text())["model"]["type"] == "Unigram"
    tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    google = _google(SPM)
    a, b = "He said ``hello'' and left.", "Straße 1,000"
    out = tok(a, b)
    assert out["input_ids"] == [2] + google(a) + [3] + google(b) + [3]
    assert out["token_type_ids"] == [0] * (len(google(a)) + 2) + [1] * (len(google(b)) + 1)
    assert tok.mask_token_id == 4 and tok.pad_token_id == 0
