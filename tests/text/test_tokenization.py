"""FullTokenizer against Google's outputs (tokenization.jsonl), its quirks, WordPiece, errors."""

import json
import os
import random
import unicodedata

import pytest
from repo_paths import FIXTURES
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from albert_tf.text.normalization import preprocess_text
from albert_tf.text.spm_encode import encode_ids, encode_pieces
from albert_tf.text.spm_train import train_sentencepiece
from albert_tf.text.tokenization import FullTokenizer

U = "\u2581"
CASES = [json.loads(line) for line in open(FIXTURES / "tokenization.jsonl", encoding="utf-8")]


def comma_model(
    path, extra=("\u258119,", "2,", "\u258119", "\u25812", "\u25812,", "100,", "\u2581100")
):
    """The fixture model plus pieces ending in digit + ',' (Google's fix-up then applies)."""
    proto = model_pb2.ModelProto()
    proto.ParseFromString((FIXTURES / "spm.model").read_bytes())
    for piece in extra:
        new = proto.pieces.add()
        new.piece, new.score, new.type = piece, 0.0, model_pb2.ModelProto.SentencePiece.NORMAL
    path.write_bytes(proto.SerializeToString())
    return str(path)


def google_encode_pieces(sp, text):
    """Google's effective encode_pieces, written out literally (the '▁' is kept)."""
    out = []
    for piece in sp.EncodeAsPieces(text):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            out.extend(sp.EncodeAsPieces(piece[:-1].replace(U, "")) + [","])
        else:
            out.append(piece)
    return out


def google_preprocess(text, lower):
    """Google's preprocess_text, written out literally."""
    text = " ".join(text.strip().split())
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return text.lower() if lower else text


@pytest.fixture(scope="module")
def tok():
    return FullTokenizer(spm_model_file=str(FIXTURES / "spm.model"))


@pytest.fixture(scope="module")
def comma_tok(tmp_path_factory):
    return FullTokenizer(spm_model_file=comma_model(tmp_path_factory.mktemp("m") / "c.model"))


# --------------------------------------------------------------------------- fixture parity


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_fixture_case(tok, case):
    pre = preprocess_text(case["text"], lower=True)
    assert pre == case["preprocessed"]
    assert tok.tokenize(pre) == case["pieces"]
    assert tok.convert_tokens_to_ids(case["pieces"]) == case["ids"]
    assert tok.encode(pre) == case["ids"]
    assert tok.tokenize(case["text"]) == case["raw_pieces"]
    assert tok.convert_tokens_to_ids(tok.tokenize(case["text"])) == case["raw_ids"]
    assert encode_ids(tok.sp_model, case["text"]) == case["raw_ids"]
    assert encode_pieces(tok.sp_model, pre) == case["pieces"]


def test_fixture_batches(tok):
    assert len(CASES) == 40
    pre = [c["preprocessed"] for c in CASES]
    assert tok.tokenize_batch(pre) == [c["pieces"] for c in CASES]
    assert tok.encode_batch(pre) == [c["ids"] for c in CASES]
    assert tok.encode_batch([c["text"] for c in CASES]) == [c["raw_ids"] for c in CASES]
    assert tok.tokenize_batch([c["text"] for c in CASES]) == [c["raw_pieces"] for c in CASES]


def test_corpus_matches_literal_google_pipeline(tok):
    sp = spm.SentencePieceProcessor(model_file=str(FIXTURES / "spm.model"))
    lines = (FIXTURES / "corpus.txt").read_text(encoding="utf-8").split("\n")[:800]
    for line in lines:
        pre = google_preprocess(line, True)
        assert preprocess_text(line, lower=True) == pre
        pieces = google_encode_pieces(sp, pre)
        assert tok.tokenize(pre) == pieces
        assert tok.encode(pre) == [sp.PieceToId(p) for p in pieces]


def test_preprocess_matches_literal_on_unicode_fuzz():
    rng = random.Random(5)
    alphabet = (
        list("aZ \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000\u200b,.")
        + [chr(rng.randrange(0x80, 0x3000)) for _ in range(300)]
        + ["e\u0301", "\u0130", "\u00a8", "\ufb01", "\u2460", "\U0001f600", "\u0e31"]
    )
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        for lower in (True, False):
            assert preprocess_text(text, lower=lower) == google_preprocess(text, lower)
    assert preprocess_text("  a \t b  ", remove_space=False) == "  a \t b  "
    assert preprocess_text(b"Caf\xc3\xa9", lower=True) == "cafe"


# --------------------------------------------------------------------------- quirks


def test_comma_digit_fixup_keeps_the_added_underline(comma_tok):
    sp = comma_tok.sp_model
    assert sp.encode("in 19, x2, 2,", out_type=str) == [
        "\u2581in",
        "\u258119,",
        "\u2581",
        "x",
        "2,",
        "\u25812,",
    ]
    # '19,' -> '▁19' ','; a piece without '▁' ('2,') gets one from the re-encoding
    assert comma_tok.tokenize("in 19, x2, 2,") == [
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
    ids = comma_tok.encode("in 19, x2, 2,")
    assert ids == comma_tok.convert_tokens_to_ids(comma_tok.tokenize("in 19, x2, 2,"))
    assert comma_tok.vocab["\u258119,"] not in ids


def test_comma_fixup_matches_literal_on_fuzz(comma_tok):
    sp = comma_tok.sp_model
    rng = random.Random(0)
    alphabet = list("0123456789,, ab.x") + ["19,", "2,", "100,", "H", "\u00e9"]
    texts = [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 25))) for _ in range(3000)
    ]
    hits = 0
    for text in texts:
        want = google_encode_pieces(sp, text)
        hits += want != sp.EncodeAsPieces(text)
        assert comma_tok.tokenize(text) == want
        assert comma_tok.encode(text) == [sp.PieceToId(p) for p in want]
    assert comma_tok.tokenize_batch(texts) == [google_encode_pieces(sp, t) for t in texts]
    assert comma_tok.encode_batch(texts) == [comma_tok.encode(t) for t in texts]
    assert hits > 100


def test_unknown_pieces_keep_surface_and_map_to_unk(tok):
    assert tok.tokenize("Hello") == ["\u2581", "H", "ell", "o"]
    assert tok.convert_tokens_to_ids(["H", "not-a-piece", "\u2581the"]) == [1, 1, 14]
    assert tok.convert_ids_to_tokens([0, 1, 2, 3, 4, 14]) == [
        "<pad>",
        "<unk>",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "\u2581the",
    ]


def test_sampling_gives_valid_segmentations(tok):
    text = "the quick brown fox jumps over the lazy dog"
    seen = set()
    for _ in range(30):
        pieces = tok.tokenize(text, sample=True)
        assert "".join(pieces).replace(U, " ").strip() == text
        seen.add(tuple(pieces))
    assert len(seen) > 1


# --------------------------------------------------------------------------- special ids


def test_special_ids_from_model(tok):
    sp = tok.sp_model
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.cls_id == sp.piece_to_id("[CLS]") and tok.pad_id == sp.pad_id()
    assert tok.vocab_size == len(tok.vocab) == len(tok.inv_vocab) == 1000
    assert all(tok.inv_vocab[i] == p for p, i in tok.vocab.items())


def test_special_ids_are_read_not_hard_coded(tmp_path):
    proto = model_pb2.ModelProto()
    proto.ParseFromString((FIXTURES / "spm.model").read_bytes())
    # swap [CLS] (2) and [MASK] (4)
    proto.pieces[2].piece, proto.pieces[4].piece = "[MASK]", "[CLS]"
    path = tmp_path / "swapped.model"
    path.write_bytes(proto.SerializeToString())
    t = FullTokenizer(spm_model_file=str(path))
    assert (t.cls_id, t.sep_id, t.mask_id) == (4, 3, 2)


# --------------------------------------------------------------------------- errors


def _one_line(err):
    return "\n" not in str(err.value)


def test_missing_spm_file(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        FullTokenizer(spm_model_file=str(tmp_path / "nope.model"))
    assert "nope.model" in str(err.value) and _one_line(err)


def test_corrupt_spm_file(tmp_path):
    path = tmp_path / "bad.model"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError) as err:
        FullTokenizer(spm_model_file=str(path))
    assert "bad.model" in str(err.value) and "corrupt" in str(err.value) and _one_line(err)
    path.write_bytes((FIXTURES / "spm.model").read_bytes()[:5000])
    with pytest.raises(ValueError, match="truncated"):
        FullTokenizer(spm_model_file=str(path))


def test_wordpiece_vocab_given_as_spm_model(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##s\n", encoding="utf-8")
    with pytest.raises(ValueError) as err:
        FullTokenizer(spm_model_file=str(path))
    assert "vocab.txt" in str(err.value) and "vocab_file" in str(err.value) and _one_line(err)
    with pytest.raises(ValueError, match=r"\.vocab text file"):
        FullTokenizer(spm_model_file=str(FIXTURES / "spm.vocab"))


def test_spm_model_without_control_symbols(tmp_path):
    proto = model_pb2.ModelProto()
    proto.ParseFromString((FIXTURES / "spm.model").read_bytes())
    proto.pieces[3].piece = "[FOO]"
    path = tmp_path / "nosep.model"
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(ValueError) as err:
        FullTokenizer(spm_model_file=str(path))
    assert "nosep.model" in str(err.value) and "[SEP]" in str(err.value) and _one_line(err)


def test_no_files_given():
    with pytest.raises(ValueError, match="spm_model_file"):
        FullTokenizer()


# --------------------------------------------------------------------------- WordPiece


@pytest.fixture()
def wp_vocab(tmp_path):
    tokens = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "un",
        "##aff",
        "##able",
        "hello",
        "world",
        ",",
        "!",
        "the",
        "##s",
        "cafe",
        "我",
        "喜",
        "a",
        "##a",
    ]
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return str(path)


def test_wordpiece_mode(wp_vocab):
    t = FullTokenizer(vocab_file=wp_vocab, do_lower_case=True)
    assert t.sp_model is None
    assert t.tokenize("UNaffable Hello, world!") == [
        "un",
        "##aff",
        "##able",
        "hello",
        ",",
        "world",
        "!",
    ]
    assert t.tokenize("Café\t我喜欢") == ["cafe", "我", "喜", "[UNK]"]
    assert t.tokenize("thes xyz") == ["the", "##s", "[UNK]"]
    assert t.tokenize("hello\x00\ufffd world\u200b") == ["hello", "world"]
    assert t.tokenize("a" * 200) == ["a"] + ["##a"] * 199
    assert t.tokenize("a" * 201) == ["[UNK]"]
    assert t.convert_tokens_to_ids(["hello", "##s", "zzz"]) == [8, 13, 1]
    assert t.convert_ids_to_tokens([2, 8]) == ["[CLS]", "hello"]
    assert (t.pad_id, t.unk_id, t.cls_id, t.sep_id, t.mask_id) == (0, 1, 2, 3, 4)


def test_wordpiece_cased_keeps_case_and_accents(wp_vocab):
    t = FullTokenizer(vocab_file=wp_vocab, do_lower_case=False)
    assert t.basic_tokenizer.tokenize("Café, OK") == ["Café", ",", "OK"]
    assert t.tokenize("hello Hello") == ["hello", "[UNK]"]


def test_wordpiece_missing_vocab(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        FullTokenizer(vocab_file=str(tmp_path / "missing.txt"))


# --------------------------------------------------------------------------- training


def test_train_sentencepiece_recipe(tmp_path):
    prefix = tmp_path / "out" / "tiny"
    path = train_sentencepiece(str(FIXTURES / "corpus.txt"), str(prefix), 400, num_threads=2)
    assert path == str(prefix) + ".model" and os.path.isfile(str(prefix) + ".vocab")
    assert sorted(os.listdir(tmp_path / "out")) == ["tiny.model", "tiny.vocab"]  # no temp left
    t = FullTokenizer(spm_model_file=path)
    sp = t.sp_model
    assert sp.get_piece_size() == 400
    assert [sp.id_to_piece(i) for i in range(13)] == [
        "<pad>",
        "<unk>",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "(",
        ")",
        '"',
        "-",
        ".",
        "\u2013",
        "\u00a3",
        "\u20ac",
    ]
    assert (t.pad_id, t.unk_id, t.cls_id, t.sep_id, t.mask_id) == (0, 1, 2, 3, 4)
    assert sp.bos_id() == -1 and sp.eos_id() == -1
    assert all(sp.is_control(i) for i in (2, 3, 4))
    proto = model_pb2.ModelProto()
    proto.ParseFromString(open(path, "rb").read())
    user = model_pb2.ModelProto.SentencePiece.USER_DEFINED
    assert [p.type for p in proto.pieces[5:13]] == [user] * 8
    assert proto.trainer_spec.model_type == model_pb2.TrainerSpec.UNIGRAM
    assert abs(proto.trainer_spec.character_coverage - 0.99995) < 1e-7
    assert t.tokenize("the function (x) - 1.")[-1] == "."


def test_train_sentencepiece_missing_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.txt"):
        train_sentencepiece(str(tmp_path / "nothing.txt"), str(tmp_path / "m"), 100)
