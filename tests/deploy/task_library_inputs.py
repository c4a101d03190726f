"""What the TFLite Task Library 0.4.4 feeds a BERT model and how it picks QA answers, restated
in Python (checked against the Task Library itself with an echo model: 0 of 1,484 texts fed
differently). Tests use it to compare a LiteRT file with Keras on exactly the Task Library's
inputs, and docs/deployment.md's tokenization figures come from it.

`BertNLClassifier`: the text lowercased in ASCII only (`absl::AsciiStrToLower`: A-Z, not É or
Σ; no whitespace collapsing, no NFKD, no accent stripping; the SentencePiece model's own
normalizer still runs), SentencePiece pieces mapped to ids, `[CLS] pieces [SEP]` cut to the
input length, zero padding, mask 1 on the tokens, segment ids 0.

`BertQuestionAnswerer` (inputs fixed at 384): the query ASCII-lowercased and tokenized, cut to
64 pieces; the context split on " " only (tabs and newlines stay inside words), each word
lowercased and tokenized alone; `[CLS] query [SEP] context [SEP]`, the context cut to
384 - query - 3 pieces; segment ids 1 from the context on. Answers: the 5 best start and 5 best
end positions of all 384 paired, a pair kept when both are context pieces, end >= start and the
span has at most 32 pieces; the best 5 by start + end logit, as the words they came from.
"""

from __future__ import annotations

import dataclasses
from typing import List

import numpy as np

QA_SEQ_LENGTH = 384
QA_MAX_QUERY_LENGTH = 64
QA_MAX_ANSWER_LENGTH = 32
QA_ANSWERS = 5
ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def ascii_lower(text: str) -> str:
    """A-Z lowercased, nothing else (absl::AsciiStrToLower)."""
    return text.translate(ASCII_LOWER)


def task_library_ids(sp, text: str) -> list:
    """The piece ids the Task Library's SentencePiece tokenizer gives `text` (no [CLS]/[SEP]).

    Args:
        sp: A sentencepiece.SentencePieceProcessor of the model in the metadata.
        text: Raw text.

    Returns:
        The ids.
    """
    return [sp.piece_to_id(p) for p in sp.encode(ascii_lower(text), out_type=str)]


def _window(ids: list, segments: list, length: int):
    out = np.zeros((3, 1, length), np.int32)
    out[0, 0, : len(ids)] = ids
    out[1, 0, : len(ids)] = 1
    out[2, 0, : len(segments)] = segments
    return {"input_ids": out[0], "input_mask": out[1], "segment_ids": out[2]}


def classifier_inputs(sp, text: str, seq_length: int) -> dict:
    """The int32 [1, seq_length] input_ids, input_mask and segment_ids BertNLClassifier feeds
    for `text`, with the SentencePiece processor `sp` of the model in the metadata."""
    pieces = task_library_ids(sp, text)[: max(seq_length - 2, 0)]
    ids = [sp.piece_to_id("[CLS]")] + pieces + [sp.piece_to_id("[SEP]")]
    return _window(ids, [], seq_length)


@dataclasses.dataclass
class QaFeatures:
    """What BertQuestionAnswerer feeds the model, and how its pieces map back to words.

    Attributes:
        features: int32 [1, 384] input_ids, input_mask, segment_ids.
        words: The context split on spaces, as given.
        token_to_word: {window position: index in `words`} of the context pieces.
    """

    features: dict
    words: List[str]
    token_to_word: dict


def qa_inputs(sp, context: str, question: str) -> QaFeatures:
    """The inputs BertQuestionAnswerer.answer(context, question) feeds the model."""
    words = [w for w in context.split(" ") if w]
    query = task_library_ids(sp, question)[:QA_MAX_QUERY_LENGTH]
    doc, doc_word = [], []
    for i, word in enumerate(words):
        pieces = task_library_ids(sp, word)
        doc += pieces
        doc_word += [i] * len(pieces)
    room = QA_SEQ_LENGTH - len(query) - 3
    doc, doc_word = doc[:room], doc_word[:room]
    cls, sep = sp.piece_to_id("[CLS]"), sp.piece_to_id("[SEP]")
    ids = [cls] + query + [sep] + doc + [sep]
    segments = [0] * (len(query) + 2) + [1] * (len(doc) + 1)
    first = len(query) + 2
    token_to_word = {first + j: w for j, w in enumerate(doc_word)}
    return QaFeatures(_window(ids, segments, QA_SEQ_LENGTH), words, token_to_word)


def qa_answers(qa: QaFeatures, start_logits, end_logits) -> list:
    """The answers BertQuestionAnswerer returns for the model's logits.

    Args:
        qa: The question's QaFeatures.
        start_logits: The model's start logits [384] (or [1, 384]).
        end_logits: Its end logits.

    Returns:
        Up to 5 dicts {"text", "logit", "start", "end"}, best first (`start` / `end`: window
        positions of the span's first and last piece).
    """
    start = np.asarray(start_logits, np.float32).reshape(-1)
    end = np.asarray(end_logits, np.float32).reshape(-1)
    # indices by decreasing value, ties by increasing index (std::stable_sort's order)
    top_start = np.argsort(-start, kind="stable")[:QA_ANSWERS]
    top_end = np.argsort(-end, kind="stable")[:QA_ANSWERS]
    word = qa.token_to_word
    spans = [
        (float(start[s] + end[e]), int(s), int(e))
        for s in top_start
        for e in top_end
        if s in word and e in word and s <= e < s + QA_MAX_ANSWER_LENGTH
    ]
    spans.sort(key=lambda span: -span[0])
    return [
        {"text": " ".join(qa.words[word[s] : word[e] + 1]), "logit": logit, "start": s, "end": e}
        for logit, s, e in spans[:QA_ANSWERS]
    ]
