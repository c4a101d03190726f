"""Property tests (hypothesis): arbitrary Unicode never crashes the tokenizers, the packers or
the SQuAD character alignment; the in-graph and Python paths agree; answers map back to text.

The hypothesis profile (tests/conftest.py) is derandomized: CI draws the same examples each run.
"""

import random
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import FIXTURES
import tensorflow as tf

from albert_tf.tasks.squad import postprocess as pp
from albert_tf.tasks.squad.alignment import preprocess_with_offsets, tokenize_paragraph
from albert_tf.tasks.squad.examples import SquadExample
from albert_tf.tasks.squad.features import convert_examples_to_features
from albert_tf.text import packing
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.text.normalization import preprocess_text
from albert_tf.text.tokenization import FullTokenizer

MODEL = str(FIXTURES / "spm.model")
PY = FullTokenizer(spm_model_file=MODEL)
CLS, SEP, PAD = PY.cls_id, PY.sep_id, PY.pad_id

# Characters that exercise each preprocessing step and SentencePiece's own normaliser:
# whitespace of every kind, NUL and controls, zero-width/format characters, combining marks,
# NFKD expansions (ligature, fraction, ¨ → space + mark, U+FDFA → words), case changes that
# change length (İ, ß), final sigma, Hangul syllables and jamo, CJK, emoji, digits and commas
# (Google's comma-digit fix-up), SentencePiece's meta symbol and the model's user symbols.
TRICKY = list(
    " \t\n\r\x00\x0b\x0c\x1c\x1f\x7f\x85\xa0\u1680\u2000\u2028\u2029\u3000"
    "\u200b\u200d\ufeff\u00ad\u0301\u0308\u0345\u0e31\ufb01\u00bd\u00a8\ufdfa"
    "\u0130\u00df\u1e9e\u03a3\u03c2\ud55c\u1100\u1161\u4e2d\U0001f600\u2460"
    "\ufffd\U000e0001\U0010ffff\u2581,.-()\"\u2013\u00a3\u20ac0123456789"
) + ["1,000", "10,5", "ab", "XY", "é"]
# Any Unicode scalar value (lone surrogates are not text and cannot reach the graph).
TEXT = st.lists(st.one_of(st.characters(codec="utf-8"), st.sampled_from(TRICKY)), max_size=32).map(
    "".join
)


# ----------------------------------------------------------------------------- tokenizers
@settings(max_examples=60)
@given(TEXT)
def test_full_tokenizer_never_crashes_and_ids_are_its_pieces(text):
    for source in (preprocess_text(text, lower=True), text):
        pieces, ids = PY.tokenize(source), PY.encode(source)
        assert ids == PY.convert_tokens_to_ids(pieces)
        # an unknown piece keeps its surface text; its id reads back as <unk>
        assert all(
            p == t or i == PY.unk_id for p, t, i in zip(pieces, PY.convert_ids_to_tokens(ids), ids)
        )
        assert all(0 <= i < PY.vocab_size for i in ids)


@settings(max_examples=25)
@given(st.lists(TEXT, min_size=1, max_size=6))
def test_batch_encoding_equals_one_by_one(texts):
    assert PY.tokenize_batch(texts) == [PY.tokenize(t) for t in texts]
    assert PY.encode_batch(texts) == [PY.encode(t) for t in texts]


GRAPH = GraphTokenizer(MODEL)
GRAPH_RAW = GraphTokenizer(MODEL, preprocess=False)


@settings(max_examples=40)
@given(st.lists(TEXT, min_size=1, max_size=8))
def test_graph_tokenizer_equals_python_on_any_text(texts):
    strings = tf.constant(texts)
    pre = [s.decode("utf-8") for s in GRAPH.preprocess_text(strings).numpy()]
    assert pre == [preprocess_text(t, lower=True) for t in texts]
    assert GRAPH(strings).to_list() == [PY.encode(preprocess_text(t, lower=True)) for t in texts]
    assert GRAPH_RAW(strings).to_list() == [PY.encode(t) for t in texts]


# Mostly ASCII (every ASCII character, whitespace runs, controls), with some other text: the
# mixes that decide which of preprocess_text's fast paths a string takes.
ASCII_TEXT = st.lists(
    st.one_of(
        st.characters(max_codepoint=0x7F),
        st.sampled_from([" ", "  ", "\t", "\x1c", "\x00", "Ab", "1,0"]),
        st.sampled_from(TRICKY),
    ),
    max_size=24,
).map("".join)
GRAPH_CASED_KEEP_SPACE = GraphTokenizer(MODEL, do_lower_case=False, remove_space=False)


@settings(max_examples=40)
@given(st.lists(ASCII_TEXT, min_size=1, max_size=8))
def test_graph_preprocess_fast_paths_equal_python_on_mixed_batches(texts):
    """Clean-ASCII, other-ASCII and non-ASCII strings in one batch: each as Python's."""
    strings = tf.constant(texts)
    for graph, space, lower in ((GRAPH, True, True), (GRAPH_CASED_KEEP_SPACE, False, False)):
        got = [s.decode("utf-8") for s in graph.preprocess_text(strings).numpy()]
        assert got == [preprocess_text(t, remove_space=space, lower=lower) for t in texts]
    assert GRAPH(strings).to_list() == [PY.encode(preprocess_text(t, lower=True)) for t in texts]


@settings(max_examples=25)
@given(st.lists(st.binary(max_size=24), min_size=1, max_size=8))
def test_graph_tokenizer_equals_python_on_any_bytes(raw):
    """Invalid UTF-8 is dropped in both paths, so any bytes give the same ids."""
    want = [PY.encode(preprocess_text(b, lower=True)) for b in raw]
    assert GRAPH(tf.constant(raw)).to_list() == want


# ----------------------------------------------------------------------------- packers
IDS = st.lists(st.integers(13, 999), max_size=40)


def _reference_lengths(len_a, len_b, budget):
    """Lengths left by Google's pop-from-the-longer loop, run on lists."""
    a, b = list(range(len_a)), list(range(len_b))
    packing.truncate_seq_pair(a, b, budget)
    return len(a), len(b)


@settings(max_examples=150)
@given(IDS, st.one_of(st.none(), IDS), st.integers(3, 48))
def test_pack_ids_layout(ids_a, ids_b, max_seq_length):
    before = (list(ids_a), None if ids_b is None else list(ids_b))
    out = packing.pack_ids(ids_a, ids_b, max_seq_length, CLS, SEP, PAD)
    assert (ids_a, ids_b) == before  # the caller's lists are left alone
    pair = ids_b is not None
    la, lb = _reference_lengths(len(ids_a), len(ids_b or []), max_seq_length - 2 - pair)
    n = la + lb + 2 + pair
    want_ids = [CLS] + ids_a[:la] + [SEP] + ((ids_b[:lb] + [SEP]) if pair else [])
    assert out["input_ids"] == want_ids + [PAD] * (max_seq_length - n)
    assert out["input_mask"] == [1] * n + [0] * (max_seq_length - n)
    assert out["segment_ids"] == [0] * (la + 2) + [1] * (n - la - 2) + [0] * (max_seq_length - n)


@settings(max_examples=150)
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 2**32))
def test_random_truncation_keeps_a_window_of_the_closed_form_length(len_a, len_b, budget, seed):
    a, b = list(range(len_a)), list(range(100, 100 + len_b))
    packing.truncate_seq_pair(a, b, budget, rng=random.Random(seed))
    assert (len(a), len(b)) == packing.truncated_lengths(len_a, len_b, budget)
    for kept, first, n in ((a, 0, len_a), (b, 100, len_b)):  # only the ends were popped
        if kept:
            assert first <= kept[0] and kept[-1] < first + n
            assert kept == list(range(kept[0], kept[0] + len(kept)))


@settings(max_examples=30)
@given(st.lists(st.tuples(IDS, IDS), min_size=1, max_size=5), st.booleans(), st.integers(3, 48))
def test_pack_ids_graph_equals_python(rows, pair, max_seq_length):
    ids_a = tf.ragged.constant([a for a, _ in rows], dtype=tf.int32, ragged_rank=1)
    ids_b = (
        tf.ragged.constant([b for _, b in rows], dtype=tf.int32, ragged_rank=1) if pair else None
    )
    got = packing.pack_ids_graph(ids_a, ids_b, max_seq_length, CLS, SEP, PAD)
    want = [
        packing.pack_ids(a, b if pair else None, max_seq_length, CLS, SEP, PAD) for a, b in rows
    ]
    for key in ("input_ids", "input_mask", "segment_ids"):
        assert got[key].dtype == tf.int32 and got[key].shape == (len(rows), max_seq_length)
        assert got[key].numpy().tolist() == [w[key] for w in want], key


@settings(max_examples=10)
@given(st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=4), st.integers(3, 40))
def test_graph_encode_equals_python_pipeline(pairs, max_seq_length):
    got = GRAPH.encode(
        tf.constant([a for a, _ in pairs]), tf.constant([b for _, b in pairs]), max_seq_length
    )
    want = [
        packing.pack_ids(
            PY.encode(preprocess_text(a, lower=True)),
            PY.encode(preprocess_text(b, lower=True)),
            max_seq_length,
            CLS,
            SEP,
            PAD,
        )
        for a, b in pairs
    ]
    for key in ("input_ids", "input_mask", "segment_ids"):
        assert got[key].numpy().tolist() == [w[key] for w in want], key


# ----------------------------------------------------------------------------- SQuAD alignment
@settings(max_examples=100)
@given(TEXT, st.booleans())
def test_preprocess_with_offsets_traces_every_char(text, lower):
    out, src = preprocess_with_offsets(text, lower=lower)
    assert out == preprocess_text(text, lower=lower)
    assert len(src) == len(out) and src == sorted(src)
    for ch, i in zip(out, src):  # whitespace gives one space; text never comes from whitespace
        assert 0 <= i < len(text) and (ch == " " or not text[i].isspace())


@settings(max_examples=60)
@given(TEXT)
def test_piece_offsets_cover_the_paragraph_in_order(paragraph):
    para = tokenize_paragraph(paragraph, PY)
    assert list(para.ids) == PY.encode(preprocess_text(paragraph, lower=True))
    assert len(para.starts) == len(para.ends) == len(para.pieces)
    real = [t for t in range(len(para)) if para.ends[t] > para.starts[t]]
    assert all(0 <= para.starts[t] < para.ends[t] <= len(paragraph) for t in real)
    for s, t in zip(real, real[1:]):  # NFKD expansions may share a character between pieces
        assert para.starts[s] <= para.starts[t] and para.ends[s] <= para.ends[t]
    if para.exact:
        for t in real:  # a piece's text comes from its own slice of the paragraph
            slice_text = preprocess_text(paragraph[para.starts[t] : para.ends[t]], lower=True)
            assert para.pieces[t].replace("\u2581", "") in slice_text.replace(" ", "")


def _example(paragraph, start, end):
    answer = paragraph[start:end]
    return SquadExample("q", "Which words?", paragraph, answer, start, False, (answer,))


DOC_STRIDE = 64
MAX_SEQ_LENGTH = 384  # windows of 360+ tokens: an answer of up to ~300 tokens fits in one


def _answers(example):
    """Texts recovered from every window that holds the answer, and the stats."""
    stats = {}
    feats = convert_examples_to_features(
        [example], PY, MAX_SEQ_LENGTH, DOC_STRIDE, 16, True, stats=stats
    )
    return [
        pp.span_text(example, f, f.start_position, f.end_position)
        for f in feats
        if not f.is_impossible
    ], stats


@settings(max_examples=40)
@given(TEXT, st.data())
def test_any_answer_span_never_crashes_and_overlaps_the_gold_text(paragraph, data):
    start = data.draw(st.integers(0, len(paragraph)))
    end = data.draw(st.integers(start, len(paragraph)))
    example = _example(paragraph, start, end)
    texts, stats = _answers(example)
    assert stats["examples"] == 1 and stats["answer_offset_mismatches"] == 0
    if stats["unmapped_answers"] or stats["alignment_failures"]:
        assert texts == []  # dropped, and counted
        return
    para = tokenize_paragraph(paragraph, PY)
    first, last = para.char_span_to_tokens(start, end)
    if last - first < MAX_SEQ_LENGTH - 2 * DOC_STRIDE:  # fits in a window
        assert texts
    assert set(texts) <= {para.text(first, last)}
    assert para.starts[first] < end and para.ends[last] > start  # shares characters with it


# Word characters SentencePiece and preprocess_text keep: letters, marks, numbers, punctuation
# and symbols of any script whose NFKD holds no whitespace (¨ → " ̈" would split a word).
WORD_CHAR = st.characters(categories=("L", "M", "N", "P", "S")).filter(
    lambda c: not any(x.isspace() for x in unicodedata.normalize("NFKD", c))
)
WORD_EXTRA = [
    "\u0301",
    "\u0308",
    "\ufb01",
    "\u00bd",
    "\u0130",
    "\u00df",
    "\u03a3",
    "\u03c2",
    "\ud55c",
    "\u4e2d",
    "\u2460",
    "1,000",
    "10,5",
    "\u00e9",
    ",",
    ".",
    "-",
    "(",
    '"',
]
# A word starts with a non-mark: a leading combining mark belongs to the character before it.
WORD = st.builds(
    lambda head, tail: head + tail,
    WORD_CHAR.filter(lambda c: not unicodedata.category(c).startswith("M")),
    st.lists(st.one_of(WORD_CHAR, st.sampled_from(WORD_EXTRA)), max_size=5).map("".join),
)
SPACE = st.text(st.sampled_from(" \t\n\r\u00a0\u2028\u3000"), min_size=1, max_size=3)


@settings(max_examples=60)
@given(st.lists(st.tuples(SPACE, WORD), min_size=1, max_size=10), st.data())
def test_whole_word_answers_map_back_to_exactly_their_text(parts, data):
    paragraph, bounds = "", []
    for space, word in parts:
        paragraph += space
        bounds.append((len(paragraph), len(paragraph) + len(word)))
        paragraph += word
    first = data.draw(st.integers(0, len(parts) - 1))
    last = data.draw(st.integers(first, len(parts) - 1))
    example = _example(paragraph, bounds[first][0], bounds[last][1])
    texts, stats = _answers(example)
    assert stats["unmapped_answers"] == 0 and stats["alignment_failures"] == 0
    assert texts and all(t == example.orig_answer_text for t in texts), (texts, stats)
