"""SQuAD examples cut into Google's windowed features: [CLS] question [SEP] paragraph window
[SEP], max-context flags, p_mask and the gold token positions for training."""

from __future__ import annotations

import dataclasses
import logging
from typing import Dict, List, Optional, Sequence, Tuple

from albert_tf.tasks.squad.alignment import ParagraphTokens, tokenize_paragraph
from albert_tf.tasks.squad.examples import SquadExample
from albert_tf.text.normalization import preprocess_text
from albert_tf.text.spm_encode import encode_ids

logger = logging.getLogger(__name__)

UNIQUE_ID_START = 1000000000
MIN_ALIGNMENT = 0.8  # Google drops an example when less of the text aligns


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
    return {
        "examples": 0,
        "features": 0,
        "inexact_alignments": 0,
        "alignment_failures": 0,
        "answer_offset_mismatches": 0,
        "unmapped_answers": 0,
        "impossible_windows": 0,
    }


def _gold_tokens(example, para, stats):
    """Gold (first, last) paragraph tokens of a training example, or None to skip it."""
    start, end = example.start_char, example.end_char
    if example.paragraph_text[start:end] != example.orig_answer_text:
        stats["answer_offset_mismatches"] += 1
        logger.warning(
            "%s: answer_start %d does not point at %r",
            example.qas_id,
            start,
            example.orig_answer_text,
        )
    span = para.char_span_to_tokens(start, end)
    if span is None:
        stats["unmapped_answers"] += 1
        logger.warning("%s: the answer maps to no paragraph token; skipped", example.qas_id)
    return span


@dataclasses.dataclass
class _ExampleWindows:
    """One example cut into windows: [CLS] question [SEP] paragraph window [SEP]."""

    example: SquadExample
    ex_index: int
    para: ParagraphTokens
    query_ids: list
    spans: list  # (first paragraph token, token count) per window
    gold: Optional[tuple]  # (first, last) paragraph token of the answer in training
    tokenizer: object
    max_seq_length: int
    is_training: bool

    def feature(self, unique_id: int, span_index: int) -> SquadFeature:
        """The feature of one window, padded to max_seq_length."""
        tokenizer, para, query_ids = self.tokenizer, self.para, self.query_ids
        doc_start, doc_len = self.spans[span_index]
        ids = [tokenizer.cls_id] + list(query_ids) + [tokenizer.sep_id]
        segment = [0] * len(ids)
        p_mask = [0] + [1] * (len(query_ids) + 1)
        offset = len(ids)
        to_orig, max_ctx = {}, {}
        for k in range(doc_len):
            t = doc_start + k
            to_orig[offset + k] = (para.starts[t], para.ends[t])
            max_ctx[offset + k] = is_max_context(self.spans, span_index, t)
            ids.append(para.ids[t])
        ids.append(tokenizer.sep_id)
        segment += [1] * (doc_len + 1)
        p_mask += [0] * doc_len + [1]
        mask = [1] * len(ids)
        pad = self.max_seq_length - len(ids)
        ids, mask = ids + [tokenizer.pad_id] * pad, mask + [0] * pad
        segment, p_mask = segment + [0] * pad, p_mask + [1] * pad
        tokens = (
            tokenizer.convert_ids_to_tokens(ids[:offset])
            + list(para.pieces[doc_start : doc_start + doc_len])
            + tokenizer.convert_ids_to_tokens([tokenizer.sep_id])
        )
        start_pos = end_pos = 0
        impossible = bool(self.example.is_impossible)
        if self.is_training and not impossible:
            first, last = self.gold
            if first >= doc_start and last < doc_start + doc_len:
                start_pos, end_pos = first - doc_start + offset, last - doc_start + offset
            else:
                impossible = True
        return SquadFeature(
            unique_id,
            self.ex_index,
            span_index,
            tokens,
            ids,
            mask,
            segment,
            p_mask,
            to_orig,
            max_ctx,
            start_pos,
            end_pos,
            impossible,
            doc_len,
        )


def question_ids(tokenizer, text: str, do_lower_case: bool) -> list:
    """A question's ids as Google's SQuAD code makes them: SentencePiece on preprocess_text
    (ALBERT's squad_utils), or WordPiece on the raw text (BERT's run_squad, the Chinese
    releases)."""
    if tokenizer.sp_model is None:
        return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
    return encode_ids(tokenizer.sp_model, preprocess_text(text, lower=do_lower_case))


def convert_examples_to_features(
    examples: Sequence[SquadExample],
    tokenizer,
    max_seq_length: int,
    doc_stride: int,
    max_query_length: int,
    is_training: bool,
    do_lower_case: Optional[bool] = None,
    stats: Optional[dict] = None,
) -> List[SquadFeature]:
    """Windowed SquadFeatures for all examples; unique ids count up from 1000000000.

    ``do_lower_case`` defaults to the tokenizer's. If ``stats`` (a dict) is given it is filled
    with counts: examples, features, inexact_alignments, alignment_failures (dropped),
    answer_offset_mismatches, unmapped_answers (dropped), impossible_windows.
    """
    if max_seq_length < max_query_length + 4:
        raise ValueError(
            f"max_seq_length {max_seq_length} leaves no room for the paragraph "
            f"after a {max_query_length}-token query and 3 special tokens"
        )
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
            logger.warning(
                "%s: only %.0f%% of the paragraph aligns; dropped",
                example.qas_id,
                100 * para.coverage,
            )
            continue
        gold = None
        if is_training and not example.is_impossible:
            gold = _gold_tokens(example, para, counts)
            if gold is None:
                continue
        query = question_ids(tokenizer, example.question_text, do_lower_case)[:max_query_length]
        spans = doc_spans(len(para), max_seq_length - len(query) - 3, doc_stride)
        windows = _ExampleWindows(
            example, ex_index, para, query, spans, gold, tokenizer, max_seq_length, is_training
        )
        for span_index in range(len(spans)):
            feature = windows.feature(unique_id, span_index)
            counts["impossible_windows"] += int(is_training and feature.is_impossible)
            features.append(feature)
            unique_id += 1
    counts["features"] = len(features)
    if stats is not None:
        stats.update(counts)
    return features
