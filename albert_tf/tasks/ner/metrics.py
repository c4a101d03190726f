"""Entity-level precision, recall and F1 of NER tag sequences, equal to what seqeval reports
(seqeval's default mode for BIO, its strict mode with scheme IOBES for BIOES), in plain Python:
no seqeval at run time. Predictions are often malformed (an ``I-`` after ``O``, an ``E-``
without its ``B-``), so each scheme says what such tags count as, the way seqeval does:

- "BIO", seqeval's default mode (conlleval's lenient rules): a tag goes on the entity before it
  when it is ``I-X`` or ``E-X`` right after ``B-X`` or ``I-X`` (the same type X); every other
  tag but ``O`` starts a new entity. So ``O I-PER I-PER`` holds one PER entity over the two
  ``I-`` tags, and ``B-PER I-LOC`` holds a PER and a LOC entity.
- "BIOES", seqeval's strict mode: an entity is exactly ``S-X`` alone, or ``B-X``, any number of
  ``I-X``, then ``E-X``. Any other tags (an ``I-`` after ``O``, a ``B-`` never closed by its
  ``E-``, an ``E-`` without its ``B-``) make no entity at all.

A predicted entity is correct when a true one has the same type, sentence, start and end.
Scores are micro averages over all entities of all types: precision = correct / predicted,
recall = correct / true, F1 = 2PR / (P + R); per type the same counts restricted to the type,
with its support (number of true entities). A ratio with nothing to divide by is 0.0, as
seqeval's default ``zero_division`` gives (without its warning), never NaN.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, Sequence, Set, Tuple

from albert_tf.tasks.ner.conll import SCHEMES

Entity = Tuple[str, int, int]  # (type, first word, last word), both ends inclusive


def _parse(tag: str) -> Tuple[str, str]:
    """(prefix, type) of a tag: ("O", "") or one of B/I/E/S and a non-empty type."""
    if tag == "O":
        return "O", ""
    if len(tag) > 2 and tag[1] == "-" and tag[0] in ("B", "I", "E", "S"):
        return tag[0], tag[2:]
    raise ValueError(f'tag {tag!r} is neither "O" nor B-/I-/E-/S- and a type')


def _lenient(tags: Sequence[Tuple[str, str]]) -> Set[Entity]:
    """Entities by the default (conlleval) rules: maximal runs of continuing tags."""
    found: Set[Entity] = set()
    start = None
    for i, (prefix, type_) in enumerate(tags):
        prev_prefix, prev_type = tags[i - 1] if i else ("O", "")
        goes_on = prefix in ("I", "E") and prev_prefix in ("B", "I") and type_ == prev_type
        if goes_on:
            continue
        if start is not None:
            found.add((prev_type, start, i - 1))
        start = None if prefix == "O" else i
    if start is not None:
        found.add((tags[-1][1], start, len(tags) - 1))
    return found


def _strict_bioes(tags: Sequence[Tuple[str, str]]) -> Set[Entity]:
    """Entities by strict BIOES: ``S-X``, or ``B-X`` ``I-X``... ``E-X``; nothing else."""
    found: Set[Entity] = set()
    for i, (prefix, type_) in enumerate(tags):
        if prefix == "S":
            found.add((type_, i, i))
        elif prefix == "B":
            j = i + 1
            while j < len(tags) and tags[j] == ("I", type_):
                j += 1
            if j < len(tags) and tags[j] == ("E", type_):
                found.add((type_, i, j))
    return found


def entities(tags: Sequence[str], scheme: str = "BIO") -> Set[Entity]:
    """The entities of one tag sequence as (type, first, last) word indices, last inclusive,
    under `scheme`'s rules ("BIO": lenient, "BIOES": strict; see the module docstring).

    >>> sorted(entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC"], "BIO"))
    [('LOC', 3, 3), ('LOC', 4, 4), ('PER', 0, 1)]
    >>> sorted(entities(["B-PER", "E-PER", "O", "I-LOC", "S-LOC"], "BIOES"))
    [('LOC', 4, 4), ('PER', 0, 1)]
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme {scheme!r} is not one of {SCHEMES}")
    parsed = [_parse(tag) for tag in tags]
    return _lenient(parsed) if scheme == "BIO" else _strict_bioes(parsed)


def _scores(correct: int, predicted: int, true: int) -> Dict[str, float]:
    """Precision, recall and F1 from counts, 0.0 where undefined (seqeval's arithmetic)."""
    precision = correct / predicted if predicted else 0.0
    recall = correct / true if true else 0.0
    denominator = precision + recall
    f1 = 2.0 * precision * recall / denominator if denominator else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def entity_scores(
    true_sequences: Sequence[Sequence[str]],
    pred_sequences: Sequence[Sequence[str]],
    scheme: str = "BIO",
) -> dict:
    """Micro-averaged entity precision / recall / F1 over sentences, plus ``support`` (true
    entities) and ``per_type``: {type: {precision, recall, f1, support}} for every type that
    is true or predicted somewhere, in sorted order.

    >>> scores = entity_scores([["B-PER", "I-PER", "O", "B-LOC"]],
    ...                        [["B-PER", "I-PER", "O", "B-ORG"]], "BIO")
    >>> scores["precision"], scores["recall"], scores["support"]
    (0.5, 0.5, 2)
    >>> scores["per_type"]["PER"]
    {'precision': 1.0, 'recall': 1.0, 'f1': 1.0, 'support': 1}
    """
    if len(true_sequences) != len(pred_sequences):
        raise ValueError(
            f"{len(true_sequences)} true sentences but {len(pred_sequences)} predicted"
        )
    true_by_type, pred_by_type = defaultdict(set), defaultdict(set)
    for number, (true, pred) in enumerate(zip(true_sequences, pred_sequences)):
        if len(true) != len(pred):
            raise ValueError(f"sentence {number}: {len(true)} true tags but {len(pred)} predicted")
        for type_, first, last in entities(true, scheme):
            true_by_type[type_].add((number, first, last))
        for type_, first, last in entities(pred, scheme):
            pred_by_type[type_].add((number, first, last))
    per_type, totals = {}, [0, 0, 0]
    for type_ in sorted(set(true_by_type) | set(pred_by_type)):
        true, pred = true_by_type[type_], pred_by_type[type_]
        counts = (len(true & pred), len(pred), len(true))
        per_type[type_] = {**_scores(*counts), "support": len(true)}
        totals = [total + count for total, count in zip(totals, counts)]
    return {**_scores(*totals), "support": totals[2], "per_type": per_type}
