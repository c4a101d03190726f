"""SQuAD v1.1 / v2.0 examples, windowed features and TFRecords, as Google's ALBERT builds them.

Pure Python plus SentencePiece (TensorFlow only for the records). The pipeline:

1. :func:`read_squad_examples` reads the official JSON into :class:`SquadExample` objects.
2. :func:`tokenize_paragraph` tokenizes a paragraph as Google does
   (``encode_pieces(preprocess_text(p, lower=do_lower_case))``) and gives every piece the
   character span it came from in the ORIGINAL paragraph, exactly (see "Alignment").
3. :func:`convert_examples_to_features` cuts ``[CLS] question [SEP] paragraph window [SEP]``
   features with a sliding window (``doc_stride``), max-context flags, ``p_mask`` and, in
   training, the gold token positions (windows without the answer: start = end = 0,
   ``is_impossible`` = 1, kept, as Google keeps them).
4. :func:`squad_feature_spec` / :func:`feature_to_record` / :func:`cached_squad_records`
   write Google's record layout through :mod:`albert_tf.engine.records`.

Alignment (exact, replacing Google's banded LCS): ``preprocess_text`` is applied character by
character while recording, for each output character, the original character it came from
(whitespace runs collapse to one space, leading/trailing whitespace goes, NFKD may expand a
character, combining marks are dropped and stay attached to the character before them, and
lowercasing may change length). The pieces' text ("▁" → " ", concatenated) is then matched
to that text ignoring spaces (the pieces add or drop spaces only). These are normally
identical, giving a 1:1 map; when SentencePiece's own normaliser changed characters
(Hangul re-composition, dropped zero-width characters, ...) a ``difflib`` alignment of the
two strings is used instead and the paragraph is counted in ``stats["inexact_alignments"]``;
if fewer than 80% of the piece characters match (Google's drop rule) the paragraph's
examples are dropped and counted in ``stats["alignment_failures"]``.

p_mask: 1 for the question, both [SEP]s and padding, 0 for the paragraph and for [CLS]:
[CLS] (position 0) is the null-answer position of v2.0 (impossible training windows point
there, and the v2 start log-softmax must not mask it), as in Google's code. Post-processing
only proposes spans inside the paragraph (``token_to_orig_map``), never [CLS].
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import logging
import os
import unicodedata
from typing import Dict, List, Optional, Sequence, Tuple

from albert_tf.errors import InputError

logger = logging.getLogger(__name__)

UNIQUE_ID_START = 1000000000
MIN_ALIGNMENT = 0.8  # Google drops an example when less of the text aligns


# ----------------------------------------------------------------------------- examples
@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question: the raw texts, the (first) gold answer and every gold text for eval.

    ``start_char`` indexes ``paragraph_text`` (-1 when there is no training answer);
    ``answers`` holds all gold answer texts ([] for an unanswerable v2.0 question).
    """

    qas_id: str
    question_text: str
    paragraph_text: str
    orig_answer_text: str
    start_char: int
    is_impossible: bool
    answers: Tuple[str, ...] = ()

    @property
    def end_char(self) -> int:
        """Exclusive end of the gold answer in ``paragraph_text``."""
        return self.start_char + len(self.orig_answer_text)


def _field(obj, name, path, where):
    """obj[name], or an InputError naming the file and the place it is missing."""
    if not isinstance(obj, dict) or name not in obj:
        raise InputError(f"{path}: {where}: missing field {name!r}")
    return obj[name]


def _load_json(path):
    """The parsed JSON file, or an InputError that names it (truncated, not UTF-8)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: not valid JSON ({err}); is the file complete?") from None
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text (byte {err.object[err.start]:#04x} at "
                         f"offset {err.start})") from None


def _example_from_qa(qa, context, path, where, is_training, v2):
    """A SquadExample from one "qas" entry."""
    qid = _field(qa, "id", path, where)
    where = f"question {qid!r}"
    question = _field(qa, "question", path, where)
    is_impossible = bool(qa.get("is_impossible", False)) if v2 else False
    answers = qa.get("answers", [])
    if is_training and not is_impossible:
        answers = _field(qa, "answers", path, where)
    golds = tuple(_field(a, "text", path, where + " answer") for a in answers)
    text, start = "", -1
    if is_training and not is_impossible:
        if not answers:
            raise InputError(f"{path}: {where}: a training question needs an answer "
                             "(or is_impossible=true with --version_2_with_negative)")
        text = golds[0]
        start = int(_field(answers[0], "answer_start", path, where + " answer"))
    return SquadExample(qid, question, context, text, start, is_impossible, golds)


def read_squad_examples(path, is_training: bool, version_2_with_negative: bool
                        ) -> List[SquadExample]:
    """SquadExamples from an official SQuAD JSON file, in file order.

    Training uses each question's first answer (Google's v1 reader insists on exactly one;
    dev-style files with several are accepted). ``is_impossible`` is read only for v2.0.
    Raises ValueError naming the file for bad JSON or a missing field.
    """
    path = os.fspath(path)
    dataset = _load_json(path)
    examples = []
    for a, article in enumerate(_field(dataset, "data", path, "top level")):
        for p, paragraph in enumerate(_field(article, "paragraphs", path, f"article {a}")):
            where = f"article {a} paragraph {p}"
            context = _field(paragraph, "context", path, where)
            for qa in _field(paragraph, "qas", path, where):
                examples.append(_example_from_qa(qa, context, path, where, is_training,
                                                 version_2_with_negative))
    return examples


# ----------------------------------------------------------------------------- alignment
def preprocess_with_offsets(text: str, lower: bool = True):
    """``preprocess_text(text, lower=lower)`` char by char: (output, source index per char).

    Mirrors Google's order: collapse/strip whitespace, NFKD, drop combining marks, lowercase.
    """
    out: List[str] = []
    src: List[int] = []
    begin, end = 0, len(text)
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    prev_space = False
    for i in range(begin, end):
        ch = text[i]
        if ch.isspace():
            if not prev_space:
                out.append(" ")
                src.append(i)
            prev_space = True
            continue
        prev_space = False
        for c in unicodedata.normalize("NFKD", ch):
            if unicodedata.combining(c):
                continue
            for low in (c.lower() if lower else c):
                out.append(low)
                src.append(i)
    return "".join(out), src


def _char_ends(text: str, pre_src: Sequence[int]) -> List[int]:
    """Exclusive end of each original char, extended over the non-space chars after it that
    preprocessing drops (combining marks), so "é" written as e + U+0301 stays whole."""
    keeps = [False] * len(text)
    for j in pre_src:
        keeps[j] = True
    ends = [i + 1 for i in range(len(text))]
    for i in range(len(text) - 2, -1, -1):
        nxt = i + 1
        if not keeps[nxt] and not text[nxt].isspace():
            ends[i] = ends[nxt]
    return ends


def _same_text(a: str, b: str) -> bool:
    """Whether two strings differ only by Unicode normalisation or case (Hangul jamo vs
    syllables, final sigma), so a replaced block still counts as aligned."""
    def canon(text):
        return unicodedata.normalize("NFKC", text).casefold()
    return canon(a) == canon(b)


def _align_chars(src: str, dst: str):
    """For each char of ``dst``, the [lo, hi) span of ``src`` it matches; plus the matched
    fraction of ``dst``. Identical strings map 1:1; otherwise a difflib alignment."""
    if src == dst:
        return [(i, i + 1) for i in range(len(dst))], 1.0, True
    spans: List[Tuple[int, int]] = [(0, 0)] * len(dst)
    matched = 0
    matcher = difflib.SequenceMatcher(None, src, dst, autojunk=False)
    for tag, s1, s2, d1, d2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(d2 - d1):
                spans[d1 + k] = (s1 + k, s1 + k + 1)
            matched += d2 - d1
        elif tag == "replace":  # share the source block out in order
            n_src, n_dst = s2 - s1, d2 - d1
            if _same_text(src[s1:s2], dst[d1:d2]):
                matched += n_dst
            for k in range(n_dst):
                lo = s1 + (k * n_src) // n_dst
                hi = max(s1 + ((k + 1) * n_src) // n_dst, lo + 1)
                spans[d1 + k] = (lo, min(hi, s2))
        elif tag == "insert":  # dst chars with no source: empty span at s1
            for k in range(d1, d2):
                spans[k] = (s1, s1)
    return spans, (matched / len(dst) if dst else 1.0), False


@dataclasses.dataclass(frozen=True)
class ParagraphTokens:
    """A tokenized paragraph: pieces, ids and each piece's [start, end) in the original text.

    A piece of only "▁" covers no character: its start is the next piece's start and its end
    the previous piece's end, so spans beginning or ending on it still slice correctly.
    """

    paragraph_text: str
    pieces: Tuple[str, ...]
    ids: Tuple[int, ...]
    starts: Tuple[int, ...]
    ends: Tuple[int, ...]
    exact: bool
    coverage: float

    def __len__(self):
        return len(self.pieces)

    def text(self, first: int, last: int) -> str:
        """Original paragraph text of pieces first..last (inclusive), outer spaces stripped."""
        start, end = self.starts[first], self.ends[last]
        return self.paragraph_text[start:end].strip() if end > start else ""

    def char_span_to_tokens(self, start_char: int, end_char: int) -> Optional[Tuple[int, int]]:
        """(first, last) pieces covering original chars [start_char, end_char), or None."""
        real = [t for t in range(len(self.pieces)) if self.ends[t] > self.starts[t]
                and self.ends[t] > start_char and self.starts[t] < end_char]
        return (real[0], real[-1]) if real else None


def tokenize_paragraph(paragraph: str, tokenizer, do_lower_case: bool = True) -> ParagraphTokens:
    """Google's paragraph tokenization with an exact piece → original character map."""
    from albert_tf.text import tokenization

    sp = tokenizer.sp_model
    pieces = tokenization.encode_pieces(
        sp, tokenization.preprocess_text(paragraph, lower=do_lower_case))
    ids = tuple(sp.PieceToId(p) for p in pieces)
    pre, pre_src = preprocess_with_offsets(paragraph, lower=do_lower_case)
    src_keep = [i for i, c in enumerate(pre) if c != " "]
    dst_chars, dst_owner = [], []
    for t, piece in enumerate(pieces):
        for c in piece.replace("▁", " "):
            if c != " ":
                dst_chars.append(c)
                dst_owner.append(t)
    spans, coverage, exact = _align_chars("".join(pre[i] for i in src_keep), "".join(dst_chars))
    lo = [None] * len(pieces)
    hi = [None] * len(pieces)
    for (a, b), t in zip(spans, dst_owner):
        if b > a:
            lo[t] = a if lo[t] is None else min(lo[t], a)
            hi[t] = b if hi[t] is None else max(hi[t], b)
    char_end = _char_ends(paragraph, pre_src)
    starts, ends = _piece_offsets(lo, hi, src_keep, pre_src, char_end, len(paragraph))
    return ParagraphTokens(paragraph, tuple(pieces), ids, tuple(starts), tuple(ends),
                           exact, coverage)


def _piece_offsets(lo, hi, src_keep, pre_src, char_end, n_chars):
    """Original [start, end) per piece from its span over the kept preprocessed chars."""
    starts, ends = [0] * len(lo), [0] * len(lo)
    for t in range(len(lo)):
        if lo[t] is not None:
            starts[t] = pre_src[src_keep[lo[t]]]
            ends[t] = char_end[pre_src[src_keep[hi[t] - 1]]]
    nxt = n_chars
    for t in range(len(lo) - 1, -1, -1):  # empty pieces: start at the next real piece
        if lo[t] is None:
            starts[t] = nxt
        else:
            nxt = starts[t]
    prev = 0
    for t in range(len(lo)):  # ... and end where the previous real piece ends
        if lo[t] is None:
            ends[t] = prev
        else:
            prev = ends[t]
    return starts, ends


# ----------------------------------------------------------------------------- features
@dataclasses.dataclass
class SquadFeature:
    """One window of one example, ready for the model and for post-processing.

    ``token_to_orig_map[i]`` is the [start, end) original-paragraph character span of the
    paragraph token at position i (only paragraph positions are keys);
    ``token_is_max_context[i]`` says whether this window gives position i its most context.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: List[str]
    input_ids: List[int]
    input_mask: List[int]
    segment_ids: List[int]
    p_mask: List[int]
    token_to_orig_map: Dict[int, Tuple[int, int]]
    token_is_max_context: Dict[int, bool]
    start_position: int = 0
    end_position: int = 0
    is_impossible: bool = False
    paragraph_len: int = 0


def doc_spans(num_tokens: int, max_tokens_for_doc: int, doc_stride: int):
    """Google's sliding windows: (start, length) pairs advancing by min(length, doc_stride)."""
    spans, start = [], 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def is_max_context(spans, span_index: int, position: int) -> bool:
    """Whether window span_index gives token `position` the best min(left, right)+0.01·len."""
    best_score, best_index = None, None
    for i, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, i
    return best_index == span_index


def _new_stats():
    return {"examples": 0, "features": 0, "inexact_alignments": 0, "alignment_failures": 0,
            "answer_offset_mismatches": 0, "unmapped_answers": 0, "impossible_windows": 0}


def _gold_tokens(example, para, stats):
    """Gold (first, last) paragraph tokens of a training example, or None to skip it."""
    start, end = example.start_char, example.end_char
    if example.paragraph_text[start:end] != example.orig_answer_text:
        stats["answer_offset_mismatches"] += 1
        logger.warning("%s: answer_start %d does not point at %r", example.qas_id, start,
                       example.orig_answer_text)
    span = para.char_span_to_tokens(start, end)
    if span is None:
        stats["unmapped_answers"] += 1
        logger.warning("%s: the answer maps to no paragraph token; skipped", example.qas_id)
    return span


def _window_feature(unique_id, ex_index, span_index, spans, query_ids, para, tokenizer,
                    max_seq_length, gold, example, is_training):
    """The feature of one window: [CLS] q [SEP] doc [SEP] padded to max_seq_length."""
    doc_start, doc_len = spans[span_index]
    sp = tokenizer.sp_model
    ids = [tokenizer.cls_id] + list(query_ids) + [tokenizer.sep_id]
    segment = [0] * len(ids)
    p_mask = [0] + [1] * (len(query_ids) + 1)
    offset = len(ids)
    to_orig, max_ctx = {}, {}
    for k in range(doc_len):
        t = doc_start + k
        to_orig[offset + k] = (para.starts[t], para.ends[t])
        max_ctx[offset + k] = is_max_context(spans, span_index, t)
        ids.append(para.ids[t])
    ids.append(tokenizer.sep_id)
    segment += [1] * (doc_len + 1)
    p_mask += [0] * doc_len + [1]
    mask = [1] * len(ids)
    pad = max_seq_length - len(ids)
    ids, mask = ids + [tokenizer.pad_id] * pad, mask + [0] * pad
    segment, p_mask = segment + [0] * pad, p_mask + [1] * pad
    tokens = [sp.IdToPiece(i) for i in ids[:offset]] + list(
        para.pieces[doc_start:doc_start + doc_len]) + [sp.IdToPiece(tokenizer.sep_id)]
    start_pos = end_pos = 0
    impossible = bool(example.is_impossible)
    if is_training and not impossible:
        first, last = gold
        if first >= doc_start and last < doc_start + doc_len:
            start_pos, end_pos = first - doc_start + offset, last - doc_start + offset
        else:
            impossible = True
    return SquadFeature(unique_id, ex_index, span_index, tokens, ids, mask, segment, p_mask,
                        to_orig, max_ctx, start_pos, end_pos, impossible, doc_len)


def convert_examples_to_features(examples: Sequence[SquadExample], tokenizer,
                                 max_seq_length: int, doc_stride: int, max_query_length: int,
                                 is_training: bool, do_lower_case: Optional[bool] = None,
                                 stats: Optional[dict] = None) -> List[SquadFeature]:
    """Windowed SquadFeatures for all examples; unique ids count up from 1000000000.

    ``do_lower_case`` defaults to the tokenizer's. If ``stats`` (a dict) is given it is filled
    with counts: examples, features, inexact_alignments, alignment_failures (dropped),
    answer_offset_mismatches, unmapped_answers (dropped), impossible_windows.
    """
    from albert_tf.text import tokenization

    if max_seq_length < max_query_length + 4:
        raise ValueError(f"max_seq_length {max_seq_length} leaves no room for the paragraph "
                         f"after a {max_query_length}-token query and 3 special tokens")
    if do_lower_case is None:
        do_lower_case = getattr(tokenizer, "do_lower_case", True)
    counts = _new_stats()
    paragraphs: Dict[str, ParagraphTokens] = {}
    features: List[SquadFeature] = []
    unique_id = UNIQUE_ID_START
    for ex_index, example in enumerate(examples):
        counts["examples"] += 1
        para = paragraphs.get(example.paragraph_text)
        if para is None:
            para = tokenize_paragraph(example.paragraph_text, tokenizer, do_lower_case)
            paragraphs[example.paragraph_text] = para
            counts["inexact_alignments"] += int(not para.exact)
        if para.coverage < MIN_ALIGNMENT:
            counts["alignment_failures"] += 1
            logger.warning("%s: only %.0f%% of the paragraph aligns; dropped",
                           example.qas_id, 100 * para.coverage)
            continue
        gold = None
        if is_training and not example.is_impossible:
            gold = _gold_tokens(example, para, counts)
            if gold is None:
                continue
        query = tokenization.encode_ids(tokenizer.sp_model, tokenization.preprocess_text(
            example.question_text, lower=do_lower_case))[:max_query_length]
        spans = doc_spans(len(para), max_seq_length - len(query) - 3, doc_stride)
        for span_index in range(len(spans)):
            feature = _window_feature(unique_id, ex_index, span_index, spans, query, para,
                                      tokenizer, max_seq_length, gold, example, is_training)
            counts["impossible_windows"] += int(is_training and feature.is_impossible)
            features.append(feature)
            unique_id += 1
    counts["features"] = len(features)
    if stats is not None:
        stats.update(counts)
    return features


# ----------------------------------------------------------------------------- records
def squad_feature_spec(max_seq_length: int, is_training: bool) -> dict:
    """Google's record layout: unique_ids, input_ids, input_mask, segment_ids, p_mask
    (+ start_positions, end_positions, is_impossible in training), all int64."""
    spec = {"unique_ids": ("int64", 1), "input_ids": ("int64", max_seq_length),
            "input_mask": ("int64", max_seq_length), "segment_ids": ("int64", max_seq_length),
            "p_mask": ("int64", max_seq_length)}
    if is_training:
        spec.update(start_positions=("int64", 1), end_positions=("int64", 1),
                    is_impossible=("int64", 1))
    return spec


def feature_to_record(feature: SquadFeature, is_training: bool) -> dict:
    """The record dict of one feature, matching :func:`squad_feature_spec`."""
    record = {"unique_ids": feature.unique_id, "input_ids": feature.input_ids,
              "input_mask": feature.input_mask, "segment_ids": feature.segment_ids,
              "p_mask": feature.p_mask}
    if is_training:
        record.update(start_positions=feature.start_position,
                      end_positions=feature.end_position,
                      is_impossible=int(feature.is_impossible))
    return record


def cached_squad_records(cache_dir, input_file, spm_model_file, tokenizer, *, is_training: bool,
                         version_2_with_negative: bool, max_seq_length: int, doc_stride: int,
                         max_query_length: int, do_lower_case: bool = True, features=None):
    """(path, count) of a TFRecord file of the input file's features, built once per setting.

    The cache key holds the input file's and the SentencePiece model's SHA-256 and every
    parameter above. ``features`` (built by the caller with the same settings) skips
    re-reading and re-converting when the file must be written.
    """
    from albert_tf.engine import records

    params = {"task": "squad", "input_file": records.file_fingerprint(input_file),
              "spm_model": records.file_fingerprint(spm_model_file),
              "is_training": bool(is_training), "version_2": bool(version_2_with_negative),
              "max_seq_length": max_seq_length, "doc_stride": doc_stride,
              "max_query_length": max_query_length, "do_lower_case": bool(do_lower_case)}
    spec = squad_feature_spec(max_seq_length, is_training)

    def make_records():
        feats = features
        if feats is None:
            examples = read_squad_examples(input_file, is_training, version_2_with_negative)
            feats = convert_examples_to_features(examples, tokenizer, max_seq_length,
                                                 doc_stride, max_query_length, is_training,
                                                 do_lower_case)
        return (feature_to_record(f, is_training) for f in feats)

    name = "squad-" + ("train" if is_training else "predict")
    return records.cached_records(cache_dir, name, params, spec, make_records)


__all__ = ["SquadExample", "SquadFeature", "ParagraphTokens", "read_squad_examples",
           "preprocess_with_offsets", "tokenize_paragraph", "convert_examples_to_features",
           "doc_spans", "is_max_context", "squad_feature_spec", "feature_to_record",
           "cached_squad_records", "UNIQUE_ID_START", "MIN_ALIGNMENT"]
