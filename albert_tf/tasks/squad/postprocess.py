"""SQuAD post-processing: model outputs per window → n-best answers → prediction files.

Pure Python and NumPy. Inputs are the examples and features of :mod:`albert_tf.tasks.squad.examples`
and :mod:`albert_tf.tasks.squad.features`
and ``results``: ``{unique_id: {output name: array}}`` (see :func:`collect_results`):

* v1.1: ``start_logits`` and ``end_logits``, each [max_seq_length];
* v2.0 (Google's beam head): ``start_top_log_probs`` / ``start_top_index`` [start_n_top],
  ``end_top_log_probs`` / ``end_top_index`` [start_n_top·end_n_top] (row i·end_n_top + j is
  the j-th end for the i-th start), and ``cls_logits`` (scalar; larger = unanswerable).

A candidate span (start, end) of a window must lie in the paragraph (both positions in
``token_to_orig_map``), start must have its max context in that window, end ≥ start and
end − start + 1 ≤ max_answer_length. Candidates of all windows of a question are ranked by
start + end score; the answer text is the original paragraph substring
``paragraph[orig_start(start):orig_end(end)].strip()`` (accents and case kept); duplicate
texts keep their best-ranked span, and spans whose text is empty are skipped (in v2.0 ""
means "no answer"). The v2.0 null odds of a question is the minimum ``cls_logits`` over its
windows (Google's ``score_null``); a question is answered "" when its odds exceed the
threshold (``null_score_diff_threshold``), chosen on dev to maximise F1.
"""

from __future__ import annotations

import collections
import json
import os
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from albert_tf.core.fileio import write_text_atomic
from albert_tf.tasks.squad import evaluate as squad_eval

V1_OUTPUTS = ("start_logits", "end_logits")
V2_OUTPUTS = (
    "start_top_log_probs",
    "start_top_index",
    "end_top_log_probs",
    "end_top_index",
    "cls_logits",
)
_Candidate = collections.namedtuple("_Candidate", "score feature_index start end s_score e_score")


# ----------------------------------------------------------------------------- results
def collect_results(
    batches: Iterable[Mapping[str, np.ndarray]],
) -> Dict[int, Dict[str, np.ndarray]]:
    """{unique_id: outputs} from batched model outputs that include ``unique_ids``.

    Each batch maps names to arrays with a leading batch axis. A unique id seen more than
    once (e.g. padding repeats of the last batch) gets the mean of its outputs; index outputs
    (``*_index``) keep their first value.
    """
    sums: Dict[int, Dict[str, List[np.ndarray]]] = {}
    for batch in batches:
        uids = np.asarray(batch["unique_ids"]).reshape(-1)
        for row, uid in enumerate(uids):
            entry = sums.setdefault(int(uid), collections.defaultdict(list))
            for name, values in batch.items():
                if name != "unique_ids":
                    entry[name].append(np.asarray(values)[row])
    out = {}
    for uid, entry in sums.items():
        out[uid] = {
            n: (v[0] if n.endswith("_index") else np.mean(v, axis=0)) for n, v in entry.items()
        }
    return out


def _features_by_example(features) -> Dict[int, List[Tuple[int, object]]]:
    """{example_index: [(feature index, feature), ...]} in feature order."""
    groups: Dict[int, List[Tuple[int, object]]] = collections.defaultdict(list)
    for i, feature in enumerate(features):
        groups[feature.example_index].append((i, feature))
    return groups


def _result(results, feature, names):
    """The outputs of one feature, or a ValueError saying which one is missing."""
    out = results.get(feature.unique_id)
    if out is None:
        raise ValueError(f"no model output for feature unique_id={feature.unique_id}")
    missing = [n for n in names if n not in out]
    if missing:
        raise ValueError(f"feature {feature.unique_id}: outputs lack {missing}")
    return out


# ----------------------------------------------------------------------------- spans
def valid_span(feature, start: int, end: int, max_answer_length: int) -> bool:
    """In-paragraph, max-context start, end ≥ start and at most max_answer_length tokens."""
    return (
        start in feature.token_to_orig_map
        and end in feature.token_to_orig_map
        and feature.token_is_max_context.get(start, False)
        and start <= end < start + max_answer_length
    )


def span_text(example, feature, start: int, end: int) -> str:
    """The original paragraph text of window positions start..end, outer spaces stripped."""
    begin = feature.token_to_orig_map[start][0]
    finish = feature.token_to_orig_map[end][1]
    return example.paragraph_text[begin:finish].strip() if finish > begin else ""


def _top(values, n):
    """Indices of the n largest values, best first (ties: lower index first)."""
    return np.argsort(-np.asarray(values, dtype=np.float64), kind="stable")[:n]


def _candidates_v1(feature_index, feature, out, n_best_size, max_answer_length):
    """Valid (start, end) pairs among the top-n starts × top-n ends of one window.

    Only positions up to the paragraph's last piece are ranked: the [SEP] and padding after it
    are never spans, and ranking them (as Google did) only let them displace real candidates,
    by an amount that depended on the padded length (so bucketed and full-length predictions
    would differ)."""
    limit = max(feature.token_to_orig_map) + 1 if feature.token_to_orig_map else 0
    start_logits = np.asarray(out["start_logits"], dtype=np.float64)[:limit]
    end_logits = np.asarray(out["end_logits"], dtype=np.float64)[:limit]
    found = []
    for s in _top(start_logits, n_best_size):
        for e in _top(end_logits, n_best_size):
            s, e = int(s), int(e)
            if valid_span(feature, s, e, max_answer_length):
                found.append(
                    _Candidate(
                        start_logits[s] + end_logits[e],
                        feature_index,
                        s,
                        e,
                        float(start_logits[s]),
                        float(end_logits[e]),
                    )
                )
    return found


def _candidates_v2(feature_index, feature, out, start_n_top, end_n_top, max_answer_length):
    """Valid pairs of the beam: start i with its end_n_top ends (row i·end_n_top + j)."""
    found = []
    s_lp = np.asarray(out["start_top_log_probs"], dtype=np.float64).reshape(-1)
    s_ix = np.asarray(out["start_top_index"]).reshape(-1)
    e_lp = np.asarray(out["end_top_log_probs"], dtype=np.float64).reshape(-1)
    e_ix = np.asarray(out["end_top_index"]).reshape(-1)
    for i in range(min(start_n_top, len(s_ix))):
        for j in range(end_n_top):
            k = i * end_n_top + j
            if k >= len(e_ix):
                break
            s, e = int(s_ix[i]), int(e_ix[k])
            if valid_span(feature, s, e, max_answer_length):
                found.append(
                    _Candidate(
                        s_lp[i] + e_lp[k], feature_index, s, e, float(s_lp[i]), float(e_lp[k])
                    )
                )
    return found


def _softmax(scores):
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    exp = np.exp(scores - scores.max())
    return exp / exp.sum()


def _nbest_entries(example, features, candidates, n_best_size, names):
    """Up to n_best_size distinct non-empty texts, best first, with their probabilities."""
    entries, seen = [], set()
    for c in sorted(candidates, key=lambda c: -c.score):
        if len(entries) >= n_best_size:
            break
        text = span_text(example, features[c.feature_index], c.start, c.end)
        if not text or text in seen:
            continue
        seen.add(text)
        entries.append({"text": text, names[0]: c.s_score, names[1]: c.e_score})
    probs = _softmax([e[names[0]] + e[names[1]] for e in entries])
    return [
        {"text": e["text"], "probability": float(p), names[0]: e[names[0]], names[1]: e[names[1]]}
        for e, p in zip(entries, probs)
    ]


# ----------------------------------------------------------------------------- v1.1 / v2.0
def predict_v1(
    examples: Sequence,
    features: Sequence,
    results: Mapping[int, Mapping],
    n_best_size: int = 20,
    max_answer_length: int = 30,
):
    """(predictions {qas_id: text}, nbest {qas_id: [entries]}) from start/end logits.

    nbest entries: {text, probability (softmax over the n-best totals), start_logit,
    end_logit}. A question with no valid span gets the text "empty" (as Google's code).
    """
    predictions, nbest = collections.OrderedDict(), collections.OrderedDict()
    groups = _features_by_example(features)
    for ex_index, example in enumerate(examples):
        cands = []
        for f_index, feature in groups.get(ex_index, []):
            out = _result(results, feature, V1_OUTPUTS)
            cands += _candidates_v1(f_index, feature, out, n_best_size, max_answer_length)
        entries = _nbest_entries(
            example, features, cands, n_best_size, ("start_logit", "end_logit")
        )
        if not entries:
            entries = [{"text": "empty", "probability": 1.0, "start_logit": 0.0, "end_logit": 0.0}]
        nbest[example.qas_id] = entries
        predictions[example.qas_id] = entries[0]["text"]
    return predictions, nbest


def predict_v2(
    examples: Sequence,
    features: Sequence,
    results: Mapping[int, Mapping],
    n_best_size: int = 20,
    max_answer_length: int = 30,
    start_n_top: int = 5,
    end_n_top: int = 5,
    null_score_diff_threshold: Optional[float] = None,
):
    """(predictions, nbest, null_odds) from Google's v2.0 beam outputs.

    predictions hold the best non-null text, or "" where null_odds > the threshold (when one
    is given); null_odds[qas_id] = min cls_logits over the question's windows. nbest entries:
    {text, probability, start_log_prob, end_log_prob}; with no valid span the single entry is
    "" with log probs -1e6 (as Google's code).
    """
    predictions, nbest = collections.OrderedDict(), collections.OrderedDict()
    null_odds = collections.OrderedDict()
    groups = _features_by_example(features)
    for ex_index, example in enumerate(examples):
        cands, null = [], None
        for f_index, feature in groups.get(ex_index, []):
            out = _result(results, feature, V2_OUTPUTS)
            cls = float(np.asarray(out["cls_logits"]).reshape(-1)[0])
            null = cls if null is None else min(null, cls)
            cands += _candidates_v2(
                f_index, feature, out, start_n_top, end_n_top, max_answer_length
            )
        entries = _nbest_entries(
            example, features, cands, n_best_size, ("start_log_prob", "end_log_prob")
        )
        if not entries:
            entries = [
                {"text": "", "probability": 1.0, "start_log_prob": -1e6, "end_log_prob": -1e6}
            ]
        nbest[example.qas_id] = entries
        null_odds[example.qas_id] = float(null) if null is not None else 0.0
        predictions[example.qas_id] = entries[0]["text"]
    if null_score_diff_threshold is not None:
        predictions = apply_null_threshold(predictions, null_odds, null_score_diff_threshold)
    return predictions, nbest, null_odds


def apply_null_threshold(
    predictions: Mapping[str, str], null_odds: Mapping[str, float], threshold: float
):
    """Predictions with "" wherever the null odds exceed the threshold."""
    return collections.OrderedDict(
        (qid, "" if null_odds.get(qid, float("-inf")) > threshold else text)
        for qid, text in predictions.items()
    )


def find_best_null_threshold(
    gold: Mapping[str, List[str]], predictions: Mapping[str, str], null_odds: Mapping[str, float]
) -> Tuple[float, Dict]:
    """(threshold, metrics): the null-odds threshold maximising v2.0 F1 on `gold`, and the
    v2.0 metrics of the predictions after applying it (plus ``null_score_diff_threshold``)."""
    search = squad_eval.evaluate_v2(gold, predictions, null_odds)
    threshold = float(search["best_f1_thresh"])
    metrics = squad_eval.evaluate_v2(gold, predictions, null_odds, na_prob_thresh=threshold)
    metrics["null_score_diff_threshold"] = threshold
    return threshold, metrics


# ----------------------------------------------------------------------------- files
def _write_json(path: str, obj) -> str:
    """Write JSON to a temporary file beside `path`, then rename it into place."""
    return write_text_atomic(path, json.dumps(obj, indent=4, ensure_ascii=False) + "\n")


def write_predictions(
    output_dir,
    predictions: Mapping[str, str],
    nbest: Mapping[str, list],
    null_odds: Optional[Mapping[str, float]] = None,
) -> Dict[str, str]:
    """Write predictions.json, nbest_predictions.json (and null_odds.json); returns paths."""
    output_dir = os.fspath(output_dir)
    paths = {
        "predictions": _write_json(os.path.join(output_dir, "predictions.json"), predictions),
        "nbest": _write_json(os.path.join(output_dir, "nbest_predictions.json"), nbest),
    }
    if null_odds is not None:
        paths["null_odds"] = _write_json(os.path.join(output_dir, "null_odds.json"), null_odds)
    return paths


__all__ = [
    "collect_results",
    "valid_span",
    "span_text",
    "predict_v1",
    "predict_v2",
    "apply_null_threshold",
    "find_best_null_threshold",
    "write_predictions",
    "V1_OUTPUTS",
    "V2_OUTPUTS",
]
