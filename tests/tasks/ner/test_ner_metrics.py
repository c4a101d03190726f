"""albert_tf.tasks.ner.metrics against the real seqeval (a test-only dependency): BIO in
seqeval's default mode, BIOES in its strict mode with scheme IOBES, on hand cases and on
seeded random tag sequences, malformed predictions included."""

import warnings

import numpy as np
import pytest

from albert_tf.tasks.ner.metrics import entities, entity_scores

seqeval_metrics = pytest.importorskip("seqeval.metrics")
seqeval_scheme = pytest.importorskip("seqeval.scheme")
from seqeval.metrics.sequence_labeling import get_entities  # noqa: E402

TYPES = ("PER", "LOC", "ORG")
SEEDS = range(4)


def _mode(scheme):
    return {} if scheme == "BIO" else {"mode": "strict", "scheme": seqeval_scheme.IOBES}


def _seqeval_scores(true, pred, scheme):
    """seqeval's micro scores and per-type report, in entity_scores' shape."""
    kwargs = _mode(scheme)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UndefinedMetricWarning: seqeval sets 0.0 and warns
        result = {
            "precision": seqeval_metrics.precision_score(true, pred, **kwargs),
            "recall": seqeval_metrics.recall_score(true, pred, **kwargs),
            "f1": seqeval_metrics.f1_score(true, pred, **kwargs),
        }
        report = seqeval_metrics.classification_report(true, pred, output_dict=True, **kwargs)
    per_type = {
        name: {
            "precision": row["precision"],
            "recall": row["recall"],
            "f1": row["f1-score"],
            "support": int(row["support"]),
        }
        for name, row in report.items()
        if not name.endswith(" avg")
    }
    micro = report.get("micro avg")
    return result, per_type, micro


def _assert_same(true, pred, scheme):
    ours = entity_scores(true, pred, scheme)
    theirs, per_type, micro = _seqeval_scores(true, pred, scheme)
    for key in ("precision", "recall", "f1"):
        assert ours[key] == theirs[key], (key, ours[key], theirs[key])
        assert isinstance(ours[key], float) and not np.isnan(ours[key])
    assert ours["per_type"] == per_type
    if micro is not None:
        assert ours["support"] == micro["support"]
    return ours


def _seqeval_entities(tags, scheme):
    """seqeval's entities of one sequence as (type, first, last), last inclusive."""
    if scheme == "BIO":
        return set(get_entities(list(tags)))
    found = seqeval_scheme.Tokens(list(tags), seqeval_scheme.IOBES).entities
    return {(e.tag, e.start, e.end - 1) for e in found}  # seqeval's strict end is exclusive


# --- hand cases -------------------------------------------------------------------------------


def test_seqeval_readme_example():
    true = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    pred = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    ours = _assert_same(true, pred, "BIO")
    assert (ours["precision"], ours["recall"], ours["f1"], ours["support"]) == (0.5, 0.5, 0.5, 2)


HAND_BIO = [  # (tags, entities) under the lenient default rules
    (["O", "I-PER", "I-PER", "O"], {("PER", 1, 2)}),  # I- after O starts one
    (["I-PER"], {("PER", 0, 0)}),  # ... also at the start
    (["B-PER", "I-LOC"], {("PER", 0, 0), ("LOC", 1, 1)}),  # a type change splits
    (["B-PER", "B-PER", "I-PER"], {("PER", 0, 0), ("PER", 1, 2)}),
    (["I-PER", "B-PER"], {("PER", 0, 0), ("PER", 1, 1)}),
    (["O", "E-PER"], {("PER", 1, 1)}),  # E- without B-
    (["B-PER", "E-PER", "I-PER"], {("PER", 0, 1), ("PER", 2, 2)}),
    (["S-PER", "I-PER"], {("PER", 0, 0), ("PER", 1, 1)}),
    (["O", "O"], set()),
    ([], set()),
]


@pytest.mark.parametrize("tags, expected", HAND_BIO)
def test_bio_entities_hand_cases(tags, expected):
    assert entities(tags, "BIO") == expected == _seqeval_entities(tags, "BIO")


HAND_BIOES = [  # (tags, entities) under strict BIOES
    (["S-PER", "B-LOC", "I-LOC", "E-LOC"], {("PER", 0, 0), ("LOC", 1, 3)}),
    (["O", "I-PER", "E-PER"], set()),  # no B-
    (["B-PER", "I-PER", "O"], set()),  # never closed
    (["B-PER", "I-PER"], set()),  # closed by the sentence end: still no
    (["O", "E-PER"], set()),
    (["B-PER", "E-LOC"], set()),  # types differ
    (["B-PER", "I-LOC", "E-LOC"], set()),
    (["B-PER", "E-PER", "E-PER"], {("PER", 0, 1)}),
    (["B-PER", "B-PER", "E-PER"], {("PER", 1, 2)}),
    (["B-PER", "S-PER", "E-PER"], {("PER", 1, 1)}),
    (["B-PER", "I-PER", "S-LOC"], {("LOC", 2, 2)}),
    ([], set()),
]


@pytest.mark.parametrize("tags, expected", HAND_BIOES)
def test_bioes_entities_hand_cases(tags, expected):
    assert entities(tags, "BIOES") == expected == _seqeval_entities(tags, "BIOES")


def test_bioes_strict_example_from_seqeval_docs():
    ours = _assert_same([["B-PER", "E-PER", "S-PER"]], [["B-PER", "I-PER", "S-PER"]], "BIOES")
    assert (ours["precision"], ours["recall"]) == (1.0, 0.5)


@pytest.mark.parametrize("scheme", ["BIO", "BIOES"])
def test_no_predicted_or_no_true_entities_are_zero_not_nan(scheme):
    true = [["B-PER", "O"] if scheme == "BIO" else ["S-PER", "O"]]
    ours = _assert_same(true, [["O", "O"]], scheme)
    assert (ours["precision"], ours["recall"], ours["f1"]) == (0.0, 0.0, 0.0)
    ours = _assert_same([["O", "O"]], true, scheme)
    assert ours["per_type"]["PER"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    nothing = entity_scores([["O"]], [["O"]], scheme)
    assert nothing == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "per_type": {}}


def test_entities_in_different_sentences_do_not_match():
    ours = _assert_same([["B-PER"], ["O"]], [["O"], ["B-PER"]], "BIO")
    assert ours["f1"] == 0.0


def test_input_errors():
    with pytest.raises(ValueError, match="1 true sentences but 2 predicted"):
        entity_scores([["O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match="sentence 0: 2 true tags but 1 predicted"):
        entity_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="neither"):
        entities(["B-PER", "PER"])
    with pytest.raises(ValueError, match="scheme"):
        entities(["O"], "IOB1")


# --- random sequences -------------------------------------------------------------------------


def _valid(rng, scheme, length):
    """A well-formed tag sequence of `scheme` (entities of 1-4 words between O runs)."""
    tags = []
    while len(tags) < length:
        if rng.random() < 0.5:
            tags.append("O")
            continue
        type_, size = TYPES[rng.integers(len(TYPES))], int(rng.integers(1, 5))
        if scheme == "BIO":
            tags += [f"B-{type_}"] + [f"I-{type_}"] * (size - 1)
        elif size == 1:
            tags.append(f"S-{type_}")
        else:
            tags += [f"B-{type_}"] + [f"I-{type_}"] * (size - 2) + [f"E-{type_}"]
    return tags[:length]  # a cut BIOES entity leaves a malformed end: fine for the metrics


def _corrupt(rng, tags, scheme, rate):
    """`tags` with a fraction `rate` replaced by random tags of the scheme (malformed runs)."""
    prefixes = "BI" if scheme == "BIO" else "BIES"
    labels = ["O"] + [f"{p}-{t}" for p in prefixes for t in TYPES]
    return [labels[rng.integers(len(labels))] if rng.random() < rate else tag for tag in tags]


def _corpus(seed, scheme, sentences=100):
    rng = np.random.default_rng(seed)
    true, pred = [], []
    for _ in range(sentences):
        tags = _valid(rng, scheme, int(rng.integers(1, 20)))
        true.append(tags)
        pred.append(_corrupt(rng, tags, scheme, rate=rng.choice([0.0, 0.1, 0.3, 1.0])))
    return true, pred


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scheme", ["BIO", "BIOES"])
def test_random_corpora_match_seqeval(seed, scheme):
    true, pred = _corpus(seed, scheme)
    ours = _assert_same(true, pred, scheme)
    assert 0.0 < ours["f1"] < 1.0
    for sentence in true + pred:
        assert entities(sentence, scheme) == _seqeval_entities(sentence, scheme)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scheme", ["BIO", "BIOES"])
def test_random_malformed_both_sides_match_seqeval(seed, scheme):
    """Any tags of the scheme on both sides, e.g. a model's predictions scored against another."""
    rng = np.random.default_rng(1000 + seed)
    true = [_corrupt(rng, ["O"] * int(rng.integers(1, 12)), scheme, 0.7) for _ in range(100)]
    pred = [_corrupt(rng, tags, scheme, 0.5) for tags in true]
    _assert_same(true, pred, scheme)


@pytest.mark.parametrize("seed", SEEDS)
def test_lenient_rules_on_every_prefix_match_seqeval_default(seed):
    """The default rules also read E-/S- tags (a BIOES model scored leniently)."""
    rng = np.random.default_rng(2000 + seed)
    for _ in range(300):
        tags = _corrupt(rng, ["O"] * int(rng.integers(0, 15)), "BIOES", 0.8)
        assert entities(tags, "BIO") == _seqeval_entities(tags, "BIO"), tags
