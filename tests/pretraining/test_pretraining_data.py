"""Tests of the pretraining data builder (albert_tf.pretraining.builder) on real text.

Statistics are measured over ../shared/fixtures/corpus.txt, the BERT sample text and
the WikiExtractor sample, at seq 128 with the fixture SentencePiece model. Tolerances
are several standard errors of the sample sizes used here.
"""

import hashlib
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import python_processes

from albert_tf.pretraining import builder as pt
from albert_tf.pretraining import tokens, writer

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEQ, PRED = 128, 20
PUNCT = set('!"#$%&()*+,-./:;?@[\\]^_`{|}~')  # Google's list: no apostrophe
LETTERS = set("abcdefghijklmnopqrstuvwxyz")


@pytest.fixture(scope="module")
def spm(fixtures_dir):
    return str(fixtures_dir / "spm.model")


@pytest.fixture(scope="module")
def corpora(fixtures_dir, data_dir):
    return {
        "corpus": (str(fixtures_dir / "corpus.txt"), 2),
        "sample": (str(data_dir / "pretraining_text" / "sample_text.txt"), 40),
        "wiki": (str(data_dir / "wiki" / "AA" / "wiki_00"), 2),
    }


@pytest.fixture(scope="module")
def instances(corpora, spm):
    """name -> instances of a few dupe rounds (enough pieces for the statistics)."""
    return {
        name: pt.create_instances(
            path, spm, num_rounds=rounds, max_seq_length=SEQ, max_predictions_per_seq=PRED
        )
        for name, (path, rounds) in corpora.items()
    }


@pytest.fixture(scope="module")
def vocab(spm):
    tok = pt.load_tokenizer(pt.TokenizerSpec(spm_model_file=spm))
    return {i: p for p, i in tok.vocab.items()}


def _spec(seq, pred):
    import tensorflow as tf

    spec = {
        k: tf.io.FixedLenFeature([seq], tf.int64)
        for k in ("input_ids", "input_mask", "segment_ids", "token_boundary")
    }
    spec["masked_lm_positions"] = tf.io.FixedLenFeature([pred], tf.int64)
    spec["masked_lm_ids"] = tf.io.FixedLenFeature([pred], tf.int64)
    spec["masked_lm_weights"] = tf.io.FixedLenFeature([pred], tf.float32)
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    return spec


def _read(paths, seq, pred):
    import tensorflow as tf

    spec = _spec(seq, pred)
    return [
        {k: v.numpy() for k, v in tf.io.parse_single_example(r, spec).items()}
        for r in tf.data.TFRecordDataset([str(p) for p in paths])
    ]


def _layout(path):
    """{feature name: (kind, length)} of every record of a TFRecord file."""
    import tensorflow as tf

    layouts = set()
    for r in tf.data.TFRecordDataset([str(path)]):
        ex = tf.train.Example.FromString(r.numpy())
        layouts.add(
            tuple(
                sorted(
                    (name, f.WhichOneof("kind"), len(getattr(f, f.WhichOneof("kind")).value))
                    for name, f in ex.features.feature.items()
                )
            )
        )
    return layouts


def _sha(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def _build(tmp_path, inputs, spm, name="out.tfrecord", **kw):
    kw.setdefault("max_seq_length", SEQ)
    kw.setdefault("max_predictions_per_seq", PRED)
    kw.setdefault("dupe_factor", 2)
    out = tmp_path / name
    stats = pt.build_pretraining_data(inputs, str(out), spm_model_file=spm, **kw)
    return out, stats


# ------------------------------------------------------------------ word-start rule


def reference_is_start(piece):
    """The SentencePiece word-start rule restated from the reference."""
    if piece.startswith("\u2581") or piece.startswith("<") or piece in PUNCT:
        return True
    return any(c.lower() not in LETTERS | PUNCT for c in piece)


@pytest.mark.parametrize(
    "piece,expected",
    [
        ("\u2581the", True),
        ("s", False),
        ("ing", False),
        (".", True),
        ("<unk>", True),
        ("19", True),
        ("é", True),
        ("'s", True),
        ("s.", False),
        ("\u2581", True),
    ],
)
def test_word_start_rule_examples(piece, expected):
    assert tokens.is_start_piece_sp(piece) is expected


@pytest.mark.parametrize("name", ["corpus", "sample", "wiki"])
def test_token_boundary_marks_cls_sep_and_word_starts(instances, vocab, name):
    for inst in instances[name]:
        ids = inst.original_ids
        seps = {0, inst.len_a + 1, len(ids) - 1}
        expected = [
            1 if i in seps else int(reference_is_start(vocab[t])) for i, t in enumerate(ids)
        ]
        assert inst.token_boundary == expected
        assert ids[0] == 2 and ids[inst.len_a + 1] == 3 and ids[-1] == 3


# ------------------------------------------------------------------ masking statistics


@pytest.mark.parametrize("name", ["corpus", "sample", "wiki"])
def test_masked_fraction_and_budget(instances, name):
    insts = instances[name]
    tokens = sum(len(i.input_ids) for i in insts)
    masked = sum(len(i.masked_lm_positions) for i in insts)
    # Budget min(20, max(1, round(0.15 len))); 19/128 = 0.148 for full sequences.
    assert abs(masked / tokens - 0.15) < 0.01, masked / tokens
    budgets = [min(PRED, max(1, round(len(i.input_ids) * 0.15))) for i in insts]
    got = [len(i.masked_lm_positions) for i in insts]
    assert all(g <= b for g, b in zip(got, budgets))
    assert np.mean([g == b for g, b in zip(got, budgets)]) > 0.97
    for inst in insts:
        assert inst.masked_lm_positions == sorted(set(inst.masked_lm_positions))
        assert all(
            0 < p < len(inst.input_ids) - 1 and p != inst.len_a + 1
            for p in inst.masked_lm_positions
        )


@pytest.mark.parametrize("name", ["corpus", "sample", "wiki"])
def test_80_10_10_split(instances, name):
    mask = kept = other = 0
    for inst in instances[name]:
        for p, label in zip(inst.masked_lm_positions, inst.masked_lm_ids):
            now = inst.input_ids[p]
            mask += now == 4
            kept += now == label
            other += now not in (4, label)
    total = mask + kept + other
    assert abs(mask / total - 0.8) < 0.025
    assert abs(kept / total - 0.1) < 0.02
    assert abs(other / total - 0.1) < 0.02


def _span_stats(insts):
    drawn = np.bincount([n for i in insts for n in i.draws], minlength=4)[1:]
    used = np.bincount([s[3] for i in insts for s in i.spans], minlength=4)[1:]
    return drawn / drawn.sum(), used / used.sum()


@pytest.mark.parametrize("name", ["corpus", "wiki"])
def test_ngram_span_mix(instances, name):
    drawn, used = _span_stats(instances[name])
    # the sampling distribution p(n) ∝ 1/n = 6/11, 3/11, 2/11
    np.testing.assert_allclose(drawn, [6 / 11, 3 / 11, 2 / 11], atol=0.025)
    # realised spans: backoff to fit the budget and overlap skips favour short spans
    assert used[0] > used[1] > used[2] > 0.05


def test_ngram_span_mix_reversed(corpora, spm):
    insts = pt.create_instances(
        corpora["corpus"][0],
        spm,
        num_rounds=2,
        max_seq_length=SEQ,
        max_predictions_per_seq=PRED,
        favor_shorter_ngram=False,
    )
    drawn, used = _span_stats(insts)
    np.testing.assert_allclose(drawn, [2 / 11, 3 / 11, 6 / 11], atol=0.025)
    assert used[2] > 0.3


@pytest.mark.parametrize("name", ["corpus", "wiki"])
def test_spans_are_whole_words_within_a_segment(instances, name):
    for inst in instances[name]:
        b = inst.token_boundary
        a_lo, b_lo = 1, inst.len_a + 2
        for start, end, _, used, _ in inst.spans:
            assert start in (a_lo, b_lo) or b[start] == 1
            assert end in (inst.len_a + 1, len(b) - 1) or b[end] == 1
            assert (start < b_lo) == (end <= inst.len_a + 1)  # never spans [SEP]
            words = 1 + sum(b[start + 1 : end])
            assert words == used


def test_no_whole_word_mask_masks_single_pieces(corpora, spm):
    insts = pt.create_instances(
        corpora["corpus"][0],
        spm,
        max_seq_length=SEQ,
        max_predictions_per_seq=PRED,
        do_whole_word_mask=False,
    )
    lengths = [s[1] - s[0] for i in insts for s in i.spans]
    assert lengths and max(lengths) <= 3
    assert all(s[1] - s[0] == s[3] for i in insts for s in i.spans)


# ------------------------------------------------------------------ sentence order


def _find(haystack: str, needle: list) -> int:
    return haystack.find("," + ",".join(map(str, needle)) + ",")


@pytest.mark.parametrize("name", ["corpus", "wiki"])
def test_sop_labels_and_order(instances, corpora, spm, name):
    insts = instances[name]
    docs = [
        "," + ",".join(str(t) for s in d for t in s) + ","
        for d in pt.iter_tokenized_documents(corpora[name][0], spm)
    ]
    own = [i for i in insts if not i.random_document]
    swapped = np.mean([i.next_sentence_label for i in own])
    assert abs(swapped - 0.5) < 0.04, swapped
    assert all(i.next_sentence_label == 1 for i in insts if i.random_document)
    # single-segment chunks (short documents, long sentences) take B from another document
    assert np.mean([i.random_document for i in insts]) < 0.35
    for inst in own[:300]:
        ids = inst.original_ids
        a, b = ids[1 : inst.len_a + 1], ids[inst.len_a + 2 : -1]
        doc = next(d for d in docs if _find(d, a) >= 0 and _find(d, b) >= 0)
        a_first = _find(doc, a) < _find(doc, b)
        assert a_first == (inst.next_sentence_label == 0)


def test_random_next_sentence_mode(corpora, spm):
    insts = pt.create_instances(
        corpora["corpus"][0],
        spm,
        num_rounds=2,
        max_seq_length=SEQ,
        max_predictions_per_seq=PRED,
        random_next_sentence=True,
    )
    labels = np.array([i.next_sentence_label for i in insts])
    random_doc = np.array([i.random_document for i in insts])
    assert (labels == random_doc).all()  # label 1 exactly when B is from another document
    assert 0.45 < random_doc.mean() < 0.65


def test_sequences_fit_and_segments(instances):
    for inst in instances["corpus"]:
        assert len(inst.input_ids) <= SEQ and inst.len_a >= 1 and inst.len_b >= 1
        assert inst.segment_ids == [0] * (inst.len_a + 2) + [1] * (inst.len_b + 1)
    lengths = [len(i.input_ids) for i in instances["corpus"]]
    assert np.mean([n == SEQ for n in lengths]) > 0.5  # most fill the target
    assert min(lengths) < SEQ // 2  # short_seq_prob gives some short ones


# ------------------------------------------------------------------ input formats


def test_wiki_documents(corpora):
    path = corpora["wiki"][0]
    docs = list(pt.iter_raw_documents(path, pt.BuilderOptions()))
    text = pathlib.Path(path).read_text(encoding="utf-8")
    with_text = [
        block
        for block in text.split("</doc>")
        if any(ln.strip() for ln in block.strip().splitlines()[2:])
    ]
    assert len(docs) == len(with_text)
    assert not any(s.startswith("<doc") or s.startswith("</doc") for d in docs for s in d)
    assert docs[0][0].startswith("Jarred Shaw (born")  # the title line is dropped
    kept = list(pt.iter_raw_documents(path, pt.BuilderOptions(keep_wiki_titles=True)))
    assert kept[1][0] == "Jarred Shaw"


def test_plain_documents_split_on_blank_lines(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("a b.\nc d.\n\n\n e f.\n\ng.\n", encoding="utf-8")
    assert [len(d) for d in pt.iter_raw_documents(str(p), pt.BuilderOptions())] == [2, 1, 1]


# ------------------------------------------------------------------ outputs


def test_output_layout_matches_google_fixture(tmp_path, fixtures_dir, corpora, spm):
    out, stats = _build(
        tmp_path,
        corpora["corpus"][0],
        spm,
        max_seq_length=64,
        max_predictions_per_seq=10,
        dupe_factor=1,
    )
    ours, google = _layout(out), _layout(fixtures_dir / "pretraining.tfrecord")
    assert ours == google and len(ours) == 1
    records = _read([out], 64, 10)
    assert len(records) == stats["instances"] > 0
    _read([fixtures_dir / "pretraining.tfrecord"], 64, 10)  # one spec parses both
    for r in records[:200]:
        n = int(r["input_mask"].sum())
        assert (r["input_mask"][:n] == 1).all() and (r["input_ids"][n:] == 0).all()
        k = int(r["masked_lm_weights"].sum())
        assert (r["masked_lm_positions"][k:] == 0).all() and (r["masked_lm_ids"][k:] == 0).all()
        assert r["input_ids"][0] == 2 and r["input_ids"][n - 1] == 3


def test_written_records_equal_instances(tmp_path, corpora, spm):
    out, stats = _build(tmp_path, corpora["sample"][0], spm, dupe_factor=1, shuffle_buffer_size=1)
    insts = pt.create_instances(
        corpora["sample"][0], spm, max_seq_length=SEQ, max_predictions_per_seq=PRED
    )
    records = _read([out], SEQ, PRED)
    assert len(records) == len(insts) == stats["instances"]
    for r, inst in zip(records, insts):  # a buffer of 1 keeps document order
        n, k = len(inst.input_ids), len(inst.masked_lm_positions)
        assert r["input_ids"][:n].tolist() == inst.input_ids
        assert r["segment_ids"][:n].tolist() == inst.segment_ids
        assert r["token_boundary"][:n].tolist() == inst.token_boundary
        assert r["masked_lm_positions"][:k].tolist() == inst.masked_lm_positions
        assert r["masked_lm_ids"][:k].tolist() == inst.masked_lm_ids
        assert r["next_sentence_labels"][0] == inst.next_sentence_label


def test_statistics(tmp_path, corpora, spm):
    _, stats = _build(tmp_path, corpora["corpus"][0], spm)
    assert abs(stats["masked_fraction"] - 0.15) < 0.01
    assert abs(stats["mask_token_fraction"] - 0.8) < 0.02
    assert abs(stats["kept_fraction"] - 0.1) < 0.02
    assert abs(stats["random_piece_fraction"] - 0.1) < 0.02
    assert abs(stats["drawn_ngram_fractions"][1] - 6 / 11) < 0.025
    assert 0.45 < stats["sop_swapped_fraction"] < 0.65
    assert stats["records_per_output"] == [stats["instances"]]


def test_same_seed_same_bytes_other_seed_differs(tmp_path, corpora, spm):
    a, _ = _build(tmp_path, corpora["corpus"][0], spm, name="a.tfrecord")
    b, _ = _build(tmp_path, corpora["corpus"][0], spm, name="b.tfrecord")
    c, _ = _build(tmp_path, corpora["corpus"][0], spm, name="c.tfrecord", random_seed=7)
    assert _sha(a) == _sha(b) != _sha(c)


def test_same_output_with_1_and_2_workers(tmp_path, corpora, spm):
    inputs = [corpora["sample"][0], corpora["wiki"][0]]
    outs = {}
    for w in (1, 2):
        paths = [tmp_path / f"w{w}_{i}.tfrecord" for i in range(3)]
        stats = pt.build_pretraining_data(
            inputs,
            [str(p) for p in paths],
            spm_model_file=spm,
            max_seq_length=SEQ,
            dupe_factor=3,
            num_workers=w,
        )
        outs[w] = [_sha(p) for p in paths]
        counts = stats["records_per_output"]
        assert max(counts) - min(counts) <= 1  # round-robin
    assert outs[1] == outs[2]


def test_one_output_per_input(tmp_path, corpora, spm):
    inputs = [corpora["sample"][0], corpora["corpus"][0]]
    outs = [tmp_path / "s.tfrecord", tmp_path / "c.tfrecord"]
    stats = pt.build_pretraining_data(
        inputs,
        [str(p) for p in outs],
        spm_model_file=spm,
        max_seq_length=SEQ,
        dupe_factor=1,
        one_output_per_input=True,
    )
    per_file = [
        len(pt.create_instances(p, spm, file_index=i, max_seq_length=SEQ))
        for i, p in enumerate(inputs)
    ]
    assert stats["records_per_output"] == per_file
    assert [len(_read([p], SEQ, PRED)) for p in outs] == per_file


# ------------------------------------------------------------------ writer


def _google_example(inst, seq, pred):
    """A fresh tf.train.Example built as Google's create_int_feature/create_float_feature do."""
    import tensorflow as tf

    n, k = len(inst.input_ids), len(inst.masked_lm_positions)
    pad, ppad = [0] * (seq - n), [0] * (pred - k)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    feature = {
        "input_ids": ints(inst.input_ids + pad),
        "input_mask": ints([1] * n + pad),
        "segment_ids": ints(inst.segment_ids + pad),
        "token_boundary": ints(inst.token_boundary + pad),
        "masked_lm_positions": ints(inst.masked_lm_positions + ppad),
        "masked_lm_ids": ints(inst.masked_lm_ids + ppad),
        "masked_lm_weights": tf.train.Feature(
            float_list=tf.train.FloatList(value=[1.0] * k + [0.0] * (pred - k))
        ),
        "next_sentence_labels": ints([inst.next_sentence_label]),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def test_serializer_bytes_equal_a_fresh_google_example(instances):
    serializer = writer.ExampleSerializer(SEQ, PRED)
    insts = instances["corpus"][:50] + instances["wiki"][:50]
    for inst in insts:  # the reused template leaves nothing of the previous instance
        expected = _google_example(inst, SEQ, PRED).SerializeToString(deterministic=True)
        assert serializer.encode(inst) == expected
    assert set(_google_example(insts[0], SEQ, PRED).features.feature) == set(writer.FEATURE_NAMES)
    with pytest.raises(ValueError, match="exceeds"):
        writer.ExampleSerializer(SEQ // 2, PRED).encode(max(insts, key=lambda i: len(i.input_ids)))


def _write_part(path, records):
    with writer.record_writer(str(path)) as w:
        for r in records:
            w.write(r)


def test_output_set_deals_round_robin_and_renames_together(tmp_path):
    records = [f"record {i}".encode() + b"\x00" * (i % 3) for i in range(11)]
    _write_part(tmp_path / "p0", records[:4])
    _write_part(tmp_path / "p1", records[4:])
    paths = [str(tmp_path / "out" / f"o{i}.tfrecord") for i in range(3)]
    sink = writer.OutputSet(paths)
    sink.add_part_round_robin(str(tmp_path / "p0"))
    sink.add_part_round_robin(str(tmp_path / "p1"))
    assert not any(os.path.exists(p) for p in paths)  # only temporaries until commit
    sink.commit()
    assert sorted(os.listdir(tmp_path / "out")) == ["o0.tfrecord", "o1.tfrecord", "o2.tfrecord"]
    assert [list(writer.iter_records(p)) for p in paths] == [records[i::3] for i in range(3)]
    assert sink.counts == [4, 4, 3]


def test_output_set_per_input_and_abort(tmp_path):
    _write_part(tmp_path / "p", [b"a", b"b"])
    paths = [str(tmp_path / "x.tfrecord"), str(tmp_path / "y.tfrecord")]
    sink = writer.OutputSet(paths)
    sink.add_part_to(1, str(tmp_path / "p"))
    sink.add_part_to(1, str(tmp_path / "p"))
    assert sink.counts == [0, 4]
    sink.abort()
    assert sorted(os.listdir(tmp_path)) == ["p"]


def test_builder_modules_import_without_tensorflow():
    code = (
        "import sys; import albert_tf.pretraining.builder, albert_tf.pretraining.writer; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tensorflow'))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_peak_rss_is_this_process_high_water_mark():
    status = pathlib.Path("/proc/self/status")
    if not status.exists():
        pytest.skip("no /proc on this system")
    fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
    rss = int(fields["VmRSS"].split()[0]) * 1024
    assert pt.peak_rss_bytes() >= rss > 0


# ------------------------------------------------------------------ errors and atomicity


def test_missing_and_empty_inputs_are_named(tmp_path, spm):
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        pt.build_pretraining_data(str(missing), str(tmp_path / "o.tfrecord"), spm_model_file=spm)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.txt"):
        pt.build_pretraining_data(str(empty), str(tmp_path / "o.tfrecord"), spm_model_file=spm)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="blank.txt"):
        pt.build_pretraining_data(str(blank), str(tmp_path / "o.tfrecord"), spm_model_file=spm)
    with pytest.raises(FileNotFoundError, match=r"\*.zzz"):
        pt.build_pretraining_data(
            str(tmp_path / "*.zzz"), str(tmp_path / "o.tfrecord"), spm_model_file=spm
        )
    assert sorted(os.listdir(tmp_path)) == ["blank.txt", "empty.txt"]


@pytest.mark.parametrize("workers", [1, 2])
def test_failed_build_leaves_no_partial_output(tmp_path, corpora, spm, workers):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a fine sentence.\n\n" * 50 + b"broken \xff\xfe bytes\n")
    out = tmp_path / "out" / "o.tfrecord"
    with pytest.raises(ValueError, match="bad.txt"):
        pt.build_pretraining_data(
            [corpora["sample"][0], str(bad)],
            [str(out)],
            spm_model_file=spm,
            max_seq_length=SEQ,
            dupe_factor=2,
            num_workers=workers,
        )
    assert os.listdir(out.parent) == []  # no output, no temporary file, no token cache


# ------------------------------------------------------------------ command line


def test_cli_end_to_end(tmp_path, corpora, spm):
    outs = [tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"]
    cmd = [
        sys.executable,
        str(ROOT / "create_pretraining_data.py"),
        f"--input_file={corpora['sample'][0]}",
        f"--output_file={outs[0]},{outs[1]}",
        f"--spm_model_file={spm}",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--dupe_factor=3",
        "--random_seed=1",
    ]
    proc = python_processes.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "instances/s" in proc.stderr and "masked_fraction" in proc.stderr
    records = _read(outs, 64, 10)
    assert len(records) > 0 and all(p.exists() for p in outs)
    # a missing --input_file (exit 2, its name in the one error line): test_bad_input.py's
    # input_missing case, run with the other bad-input cases in one process
