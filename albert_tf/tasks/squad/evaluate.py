"""SQuAD v1.1 and v2.0 evaluation, written from the metrics' definitions.

Pure Python (no TensorFlow). Gold answers are ``{qas_id: [gold texts]}`` (an unanswerable
v2.0 question has an empty list); predictions are ``{qas_id: text}`` ("" means "no answer").

Definitions (the official scripts' metrics):

* normalisation: lowercase, drop ASCII punctuation (``string.punctuation``), drop the words
  a / an / the, collapse whitespace;
* exact match: the normalised prediction equals a normalised gold answer; F1: bag-of-tokens
  F1 between the normalised texts; both are the maximum over the gold answers, reported
  as percentages;
* v1.1: every listed answer is a gold answer; a missing prediction scores 0;
* v2.0: gold answers that normalise to "" are dropped and a question left with none has the
  single gold [""]; if either side is empty, F1 = EM = (both empty). A missing prediction
  scores 0 here too (the official v2.0 script skips it, then fails in the breakdown).
  ``HasAns_*`` / ``NoAns_*`` split by whether the question has answers; with null odds
  (``na_probs``, larger = more likely unanswerable) a question is predicted "" when its odds
  exceed ``na_prob_thresh``, and ``best_exact`` / ``best_f1`` are the best scores over all
  such thresholds, with the threshold that reaches them.
"""

from __future__ import annotations

import collections
import json
import os
import re
import string
from typing import Dict, List, Mapping, Optional

from albert_tf.core import fileio
from albert_tf.core.fileio import write_text_atomic

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


# ----------------------------------------------------------------------------- text metrics
def normalize_answer(text: str) -> str:
    """Lowercase, strip punctuation, drop articles, collapse whitespace (in that order)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> List[str]:
    """The normalised answer split on whitespace ([] for an empty answer)."""
    return normalize_answer(text).split() if text else []


def exact_match(prediction: str, gold: str) -> int:
    """1 if the normalised texts are equal, else 0."""
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str, empty_matches_empty: bool = True) -> float:
    """Token F1 of the normalised texts; v2.0 scores empty-vs-empty as 1 (v1.1 as 0)."""
    pred, ref = answer_tokens(prediction), answer_tokens(gold)
    if empty_matches_empty and (not pred or not ref):
        return float(pred == ref)
    common = sum((collections.Counter(pred) & collections.Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def _best_over_golds(prediction: str, golds: List[str], v2: bool):
    """(EM, F1) of one prediction: the maximum over the gold answers."""
    em = max(exact_match(prediction, g) for g in golds)
    f1 = max(f1_score(prediction, g, empty_matches_empty=v2) for g in golds)
    return em, f1


# ----------------------------------------------------------------------------- gold answers
def load_gold(path) -> Dict[str, List[str]]:
    """{qas_id: [gold answer texts]} from an official SQuAD JSON file ([] = unanswerable)."""
    path = os.fspath(path)
    try:
        dataset = fileio.read_json(path)
        gold = {}
        for article in dataset["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    gold[qa["id"]] = [a["text"] for a in qa.get("answers", [])]
        return gold
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a SQuAD JSON file ({type(err).__name__}: {err})") from err


def gold_from_examples(examples) -> Dict[str, List[str]]:
    """{qas_id: answers} from SquadExample objects (their ``answers`` field)."""
    return {ex.qas_id: list(ex.answers) for ex in examples}


def load_predictions(path) -> Dict[str, str]:
    """A predictions.json (``{qas_id: text}``) or null_odds.json (``{qas_id: float}``)."""
    return fileio.read_json(os.fspath(path))


# ----------------------------------------------------------------------------- v1.1
def evaluate_v1(gold: Mapping[str, List[str]], predictions: Mapping[str, str]) -> Dict:
    """Official SQuAD v1.1 metrics: {exact_match, f1, total, missing} (percentages)."""
    em_sum = f1_sum = 0.0
    missing = 0
    for qid, golds in gold.items():
        if qid not in predictions:
            missing += 1
            continue
        em, f1 = _best_over_golds(predictions[qid], golds or [""], v2=False)
        em_sum, f1_sum = em_sum + em, f1_sum + f1
    total = len(gold)
    return {
        "exact_match": 100.0 * em_sum / total if total else 0.0,
        "f1": 100.0 * f1_sum / total if total else 0.0,
        "total": total,
        "missing": missing,
    }


# ----------------------------------------------------------------------------- v2.0
def v2_gold_answers(golds: List[str]) -> List[str]:
    """v2.0 gold list: answers that normalise to "" are dropped; none left means [""]."""
    kept = [g for g in golds if normalize_answer(g)]
    return kept or [""]


def raw_scores_v2(gold, predictions):
    """Per-question (EM, F1) dicts with no null threshold; missing predictions score 0."""
    exact, f1 = {}, {}
    for qid, golds in gold.items():
        if qid not in predictions:
            exact[qid], f1[qid] = 0, 0.0
            continue
        exact[qid], f1[qid] = _best_over_golds(predictions[qid], v2_gold_answers(golds), v2=True)
    return exact, f1


def apply_null_odds(scores, na_probs, has_ans, threshold):
    """Scores after predicting "" wherever null odds > threshold (1 iff unanswerable)."""
    out = {}
    for qid, score in scores.items():
        if na_probs.get(qid, 0.0) > threshold:
            out[qid] = float(not has_ans[qid])
        else:
            out[qid] = score
    return out


def _mean_percent(scores, qids):
    return 100.0 * sum(scores[q] for q in qids) / len(qids) if qids else 0.0


def best_threshold(predictions, scores, na_probs, has_ans):
    """(best score %, threshold): the null-odds threshold maximising the total score.

    Threshold t predicts "" for every question with odds > t. Starting from "all null"
    (t below every odds), questions are admitted in increasing odds; a group of equal odds is
    admitted together (the official script admits them one by one, so ties can differ). An
    admitted answerable question gains its score; an admitted unanswerable one loses 1 if its
    prediction is not "". The all-null start reports t = min(odds) - 1 (the official script
    reports 0.0, which is not "all null" for logit odds).
    """
    qids = list(scores)
    if not qids:
        return 0.0, 0.0
    current = best = float(sum(1 for q in qids if not has_ans[q]))
    odds = {q: float(na_probs.get(q, 0.0)) for q in qids}
    best_t = min(odds.values()) - 1.0
    ordered = sorted(qids, key=lambda q: odds[q])
    i = 0
    while i < len(ordered):
        t = odds[ordered[i]]
        while i < len(ordered) and odds[ordered[i]] == t:
            q = ordered[i]
            if has_ans[q]:
                current += scores[q]
            elif predictions.get(q, ""):
                current -= 1
            i += 1
        if current > best:
            best, best_t = current, t
    return 100.0 * best / len(qids), best_t


def evaluate_v2(
    gold: Mapping[str, List[str]],
    predictions: Mapping[str, str],
    na_probs: Optional[Mapping[str, float]] = None,
    na_prob_thresh: float = 1.0,
) -> Dict:
    """Official SQuAD v2.0 metrics as a dict.

    Keys: exact, f1, total; HasAns_exact/f1/total and NoAns_exact/f1/total where such
    questions exist; with ``na_probs`` also best_exact, best_exact_thresh, best_f1,
    best_f1_thresh. Scores are percentages over all gold questions.
    """
    na = dict(na_probs or {})
    has_ans = {qid: _has_answer(golds) for qid, golds in gold.items()}
    exact_raw, f1_raw = raw_scores_v2(gold, predictions)
    exact = apply_null_odds(exact_raw, na, has_ans, na_prob_thresh)
    f1 = apply_null_odds(f1_raw, na, has_ans, na_prob_thresh)
    qids = list(gold)
    out = {"exact": _mean_percent(exact, qids), "f1": _mean_percent(f1, qids), "total": len(qids)}
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        sub = [q for q in qids if has_ans[q] == wanted]
        if sub:
            out[f"{prefix}_exact"] = _mean_percent(exact, sub)
            out[f"{prefix}_f1"] = _mean_percent(f1, sub)
            out[f"{prefix}_total"] = len(sub)
    if na_probs is not None:
        out["best_exact"], out["best_exact_thresh"] = best_threshold(
            predictions, exact_raw, na, has_ans
        )
        out["best_f1"], out["best_f1_thresh"] = best_threshold(predictions, f1_raw, na, has_ans)
    return out


def _has_answer(golds: List[str]) -> bool:
    """True if the question is answerable (the official script: its answer list is non-empty)."""
    return bool(golds)


# ----------------------------------------------------------------------------- output
def write_eval_results(path, metrics: Mapping) -> str:
    """Write ``key = value`` lines, sorted by key (Google's eval_results.txt), atomically."""
    return write_text_atomic(path, "".join(f"{key} = {metrics[key]}\n" for key in sorted(metrics)))


def evaluate_files(data_file, prediction_file, na_prob_file=None, version_2_with_negative=False):
    """Evaluate prediction files against an official data file (the scripts' command line)."""
    gold = load_gold(data_file)
    predictions = load_predictions(prediction_file)
    if not version_2_with_negative:
        return evaluate_v1(gold, predictions)
    na = load_predictions(na_prob_file) if na_prob_file else None
    return evaluate_v2(gold, predictions, na)


__all__ = [
    "normalize_answer",
    "answer_tokens",
    "exact_match",
    "f1_score",
    "load_gold",
    "gold_from_examples",
    "load_predictions",
    "evaluate_v1",
    "evaluate_v2",
    "raw_scores_v2",
    "apply_null_odds",
    "best_threshold",
    "write_eval_results",
    "evaluate_files",
    "v2_gold_answers",
]
