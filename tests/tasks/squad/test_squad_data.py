"""SQuAD examples and features on the real samples: exact answer round trips through the
character alignment, windows, max context, p_mask, impossible windows, records."""

import json
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.engine import records
from albert_tf.tasks.squad import postprocess as pp
from albert_tf.tasks.squad.alignment import preprocess_with_offsets, tokenize_paragraph
from albert_tf.tasks.squad.examples import SquadExample, read_squad_examples
from albert_tf.tasks.squad.features import convert_examples_to_features, doc_spans, is_max_context
from albert_tf.tasks.squad.records import (
    cached_squad_records,
    feature_to_record,
    squad_feature_spec,
)
from albert_tf.text import tokenization
from albert_tf.text.normalization import preprocess_text


@pytest.fixture(scope="module")
def tokenizer(fixtures_dir):
    return tokenization.FullTokenizer(
        vocab_file=None, do_lower_case=True, spm_model_file=str(fixtures_dir / "spm.model")
    )


def _files(data_dir):
    return [
        (data_dir / "squad" / "v1.1" / "squad.json", False),
        (data_dir / "squad" / "v2.0" / "small.json", True),
        (data_dir / "squad" / "v2.0" / "dev-v2.0.json", True),
    ]


# ----------------------------------------------------------------------------- reading
def test_read_examples_offsets_and_fields(data_dir):
    path = data_dir / "squad" / "v2.0" / "small.json"
    train = read_squad_examples(path, is_training=True, version_2_with_negative=True)
    assert len(train) == 626
    answerable = [e for e in train if not e.is_impossible]
    impossible = [e for e in train if e.is_impossible]
    assert answerable and impossible
    for e in answerable:
        assert e.paragraph_text[e.start_char : e.end_char] == e.orig_answer_text
        assert e.answers[0] == e.orig_answer_text
    assert all(
        e.orig_answer_text == "" and e.start_char == -1 and e.answers == () for e in impossible
    )
    v1 = read_squad_examples(path, is_training=False, version_2_with_negative=False)
    assert not any(e.is_impossible for e in v1)  # is_impossible is a v2.0 field


def test_read_errors_name_the_file(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"data": [')
    with pytest.raises(ValueError, match="broken.json.*JSON"):
        read_squad_examples(bad, True, False)
    missing = tmp_path / "noq.json"
    missing.write_text(
        json.dumps(
            {"data": [{"paragraphs": [{"context": "x", "qas": [{"id": "q1", "answers": []}]}]}]}
        )
    )
    with pytest.raises(ValueError, match=r"noq.json.*q1.*'question'"):
        read_squad_examples(missing, False, False)
    noans = tmp_path / "noans.json"
    noans.write_text(
        json.dumps(
            {"data": [{"paragraphs": [{"context": "x", "qas": [{"id": "q2", "question": "?"}]}]}]}
        )
    )
    with pytest.raises(ValueError, match=r"noans.json.*q2.*'answers'"):
        read_squad_examples(noans, True, False)
    assert read_squad_examples(noans, False, False)[0].answers == ()


# ----------------------------------------------------------------------------- alignment
def test_preprocess_with_offsets_matches_preprocess_text(data_dir):
    texts = [
        e.paragraph_text
        for e in read_squad_examples(data_dir / "squad" / "v2.0" / "small.json", False, True)
    ]
    texts += [
        "  Café\u00a0\u00a0Zürich \t\n ÅNGSTRÖM  ",
        unicodedata.normalize("NFD", "Crème brûlée"),
        "ﬁne ½ ™ İstanbul 한국어",
    ]
    for text in texts:
        for lower in (True, False):
            out, src = preprocess_with_offsets(text, lower=lower)
            assert out == preprocess_text(text, lower=lower)
            assert len(src) == len(out) and src == sorted(src)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_every_training_answer_round_trips_exactly(data_dir, tokenizer, index):
    """For each answerable training question, gold chars -> tokens -> original text."""
    path, v2 = _files(data_dir)[index]
    examples = read_squad_examples(path, is_training=True, version_2_with_negative=v2)
    stats = {}
    feats = convert_examples_to_features(examples, tokenizer, 384, 128, 64, True, stats=stats)
    assert stats["alignment_failures"] == 0 and stats["inexact_alignments"] == 0
    assert stats["unmapped_answers"] == 0 and stats["answer_offset_mismatches"] == 0
    exceptions, checked = [], 0
    for i, ex in enumerate(examples):
        if ex.is_impossible:
            continue
        checked += 1
        windows = [f for f in feats if f.example_index == i and not f.is_impossible]
        assert windows, ex.qas_id
        for f in windows:
            text = pp.span_text(ex, f, f.start_position, f.end_position)
            if text != ex.orig_answer_text:
                exceptions.append((ex.qas_id, ex.orig_answer_text, text))
    assert checked == {0: 5, 1: 293, 2: 8}[index]
    assert exceptions == []


def test_accents_case_and_odd_unicode_map_back(tokenizer):
    nfd = unicodedata.normalize("NFD", "Crème Brûlée")
    jose = unicodedata.normalize("NFD", "José")  # ends on a combining accent
    para = (
        f"We met at  Café Zürich\tin 1858, ate {nfd} with ÅNGSTRÖM and {jose}; "
        "the ΟΔΟΣ sign read 한국어 and\u200bﬁne ½."
    )
    golds = ["Café Zürich", nfd, jose, "ÅNGSTRÖM", "ΟΔΟΣ", "한국어", "ﬁne", "1858"]
    examples = [
        SquadExample(f"q{i}", "Where?", para, g, para.index(g), False, (g,))
        for i, g in enumerate(golds)
    ]
    stats = {}
    feats = convert_examples_to_features(examples, tokenizer, 128, 32, 16, True, stats=stats)
    assert stats["inexact_alignments"] == 1  # σ/ς and Hangul: SentencePiece renormalised
    assert stats["alignment_failures"] == 0
    for f in feats:
        ex = examples[f.example_index]
        assert not f.is_impossible
        assert pp.span_text(ex, f, f.start_position, f.end_position) == ex.orig_answer_text


def test_postprocess_on_real_features_returns_original_substring(tokenizer):
    para = "The Normans met at CAFÉ Zürich in 1858."
    ex = SquadExample("q", "Where did they meet?", para, "", -1, False, ("CAFÉ Zürich",))
    (f,) = convert_examples_to_features([ex], tokenizer, 64, 16, 16, False)
    train = SquadExample("q", ex.question_text, para, "CAFÉ Zürich", para.index("CAFÉ"), False, ())
    (g,) = convert_examples_to_features([train], tokenizer, 64, 16, 16, True)
    start, end = np.zeros(64), np.zeros(64)
    start[g.start_position], end[g.end_position] = 4.0, 4.0
    start[0] = end[0] = 10.0  # CLS is never an answer span
    preds, _ = pp.predict_v1([ex], [f], {f.unique_id: {"start_logits": start, "end_logits": end}})
    assert preds == {"q": "CAFÉ Zürich"}


# ----------------------------------------------------------------------------- windows
def test_doc_spans_and_max_context():
    assert doc_spans(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert doc_spans(3, 4, 3) == [(0, 3)]
    assert doc_spans(9, 4, 8) == [(0, 4), (4, 4), (8, 1)]  # advance by min(len, stride)
    spans = [(0, 4), (3, 4), (6, 4)]
    # token 3: span 0 score min(3,0)+.04, span 1 min(0,3)+.04 -> first wins
    assert is_max_context(spans, 0, 3) and not is_max_context(spans, 1, 3)
    assert is_max_context(spans, 1, 5) and not is_max_context(spans, 2, 5)


@pytest.fixture(scope="module")
def long_example(data_dir):
    examples = read_squad_examples(data_dir / "squad" / "v2.0" / "small.json", True, True)
    longest = max(len(e.paragraph_text) for e in examples)
    return [e for e in examples if len(e.paragraph_text) == longest and not e.is_impossible][0]


def test_windows_over_a_long_paragraph(tokenizer, long_example):
    L, stride, maxq = 64, 16, 12
    para = tokenize_paragraph(long_example.paragraph_text, tokenizer)
    feats = convert_examples_to_features([long_example], tokenizer, L, stride, maxq, True)
    n_query = feats[0].tokens.index("[SEP]") - 1
    assert 0 < n_query <= maxq
    per_window = L - n_query - 3
    assert len(feats) == len(doc_spans(len(para), per_window, stride)) > 10
    assert [f.doc_span_index for f in feats] == list(range(len(feats)))
    assert [f.unique_id for f in feats] == list(range(1000000000, 1000000000 + len(feats)))
    spans = doc_spans(len(para), per_window, stride)
    covered = {}
    for f in feats:
        assert len(f.input_ids) == len(f.input_mask) == len(f.segment_ids) == len(f.p_mask) == L
        assert f.input_ids[0] == tokenizer.cls_id and f.input_ids[n_query + 1] == tokenizer.sep_id
        assert f.paragraph_len <= per_window
        last = n_query + 2 + f.paragraph_len
        assert f.input_ids[last] == tokenizer.sep_id and sum(f.input_mask) == last + 1
        assert f.segment_ids[: n_query + 2] == [0] * (n_query + 2)
        assert f.segment_ids[n_query + 2 : last + 1] == [1] * (f.paragraph_len + 1)
        for pos, span in f.token_to_orig_map.items():
            t = spans[f.doc_span_index][0] + pos - (n_query + 2)
            assert span == (para.starts[t], para.ends[t])
            covered.setdefault(t, []).append(f.token_is_max_context[pos])
    # every paragraph token appears, and has its max context in exactly one window
    assert sorted(covered) == list(range(len(para)))
    assert all(sum(flags) == 1 for flags in covered.values())
    with_answer = [f for f in feats if not f.is_impossible]
    without = [f for f in feats if f.is_impossible]
    assert with_answer and without  # windows lacking the answer are kept, as Google does
    assert all(f.start_position == f.end_position == 0 for f in without)
    for f in with_answer:
        assert (
            pp.span_text(long_example, f, f.start_position, f.end_position)
            == long_example.orig_answer_text
        )


def test_p_mask_and_impossible_examples(data_dir, tokenizer):
    examples = read_squad_examples(data_dir / "squad" / "v2.0" / "dev-v2.0.json", True, True)
    feats = convert_examples_to_features(examples, tokenizer, 128, 64, 32, True)
    for f in feats:
        n_real = sum(f.input_mask)
        assert f.p_mask[0] == 0  # CLS: the null-answer position of v2.0
        in_para = {i for i in range(1, len(f.p_mask)) if f.p_mask[i] == 0}
        assert in_para == set(f.token_to_orig_map)
        assert all(f.p_mask[i] == 1 for i in range(n_real, len(f.p_mask)))  # padding
        assert f.p_mask[n_real - 1] == 1 and f.p_mask[f.tokens.index("[SEP]")] == 1
        if examples[f.example_index].is_impossible:
            assert f.is_impossible and f.start_position == f.end_position == 0
        if not f.is_impossible:
            assert f.p_mask[f.start_position] == 0 and f.p_mask[f.end_position] == 0
    assert any(examples[f.example_index].is_impossible for f in feats)
    with pytest.raises(ValueError, match="max_seq_length"):
        convert_examples_to_features(examples, tokenizer, 20, 8, 17, True)


# ----------------------------------------------------------------------------- records
def test_records_round_trip_and_cache(tmp_path, data_dir, fixtures_dir, tokenizer):
    path = data_dir / "squad" / "v1.1" / "squad.json"
    examples = read_squad_examples(path, True, False)
    feats = convert_examples_to_features(examples, tokenizer, 96, 32, 24, True)
    spec = squad_feature_spec(96, True)
    assert set(spec) == {
        "unique_ids",
        "input_ids",
        "input_mask",
        "segment_ids",
        "p_mask",
        "start_positions",
        "end_positions",
        "is_impossible",
    }
    assert set(squad_feature_spec(96, False)) == {
        "unique_ids",
        "input_ids",
        "input_mask",
        "segment_ids",
        "p_mask",
    }
    kwargs = dict(
        is_training=True,
        version_2_with_negative=False,
        max_seq_length=96,
        doc_stride=32,
        max_query_length=24,
    )
    spm = fixtures_dir / "spm.model"
    rec, count = cached_squad_records(tmp_path, path, spm, tokenizer, **kwargs)
    assert count == len(feats)
    first = next(iter(tf.data.TFRecordDataset(rec)))
    got = records.decode(first, spec)
    want = feature_to_record(feats[0], True)
    for name in spec:
        assert np.array_equal(got[name].numpy().reshape(-1), np.reshape(want[name], -1)), name
    again, _ = cached_squad_records(tmp_path, path, spm, tokenizer, features=[], **kwargs)
    assert again == rec  # cached: the (empty) features were not used
    other, _ = cached_squad_records(tmp_path, path, spm, tokenizer, **{**kwargs, "doc_stride": 16})
    assert other != rec
