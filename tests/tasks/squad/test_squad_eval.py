"""SQuAD v1.1/v2.0 metrics against hand-computed values of the definitions, the null-odds
threshold search, and post-processing on synthetic model outputs."""

import json

import numpy as np
import pytest

from albert_tf.tasks.squad import evaluate as ev
from albert_tf.tasks.squad import postprocess as pp
from albert_tf.tasks.squad.examples import SquadExample
from albert_tf.tasks.squad.features import SquadFeature


# ----------------------------------------------------------------------------- definitions
def test_normalisation_order_and_rules():
    assert ev.normalize_answer("The  Golden,  Statue!") == "golden statue"
    assert ev.normalize_answer("Theatre an Anne") == "theatre anne"  # whole words only
    assert ev.normalize_answer("a-b") == "ab"  # punctuation dropped, not split
    assert ev.answer_tokens("") == []


def test_f1_definition():
    assert ev.f1_score("Bernadette", "Saint Bernadette Soubirous") == pytest.approx(0.5)
    assert ev.f1_score("in 1858.", "1858") == pytest.approx(2 / 3)
    assert ev.f1_score("a a b", "a b b") == pytest.approx(2 / 3)  # multiset overlap = 2
    assert ev.f1_score("", "") == 1.0 and ev.f1_score("", "x") == 0.0
    assert ev.f1_score("", "", empty_matches_empty=False) == 0.0  # v1.1 rule


V1_GOLD = {
    "q1": ["Denver Broncos", "the Denver Broncos"],
    "q2": ["Saint Bernadette Soubirous"],
    "q3": ["1858"],
    "q4": ["a golden statue"],
    "q5": ["Notre Dame"],
}
V1_PRED = {
    "q1": "Denver Broncos",
    "q2": "Bernadette",
    "q3": "in 1858.",
    "q4": "The Golden Statue!",
}  # q5 missing -> 0


def test_v1_hand_computed():
    out = ev.evaluate_v1(V1_GOLD, V1_PRED)
    assert out["exact_match"] == pytest.approx(100 * 2 / 5)
    assert out["f1"] == pytest.approx(100 * (1 + 0.5 + 2 / 3 + 1 + 0) / 5)
    assert out["total"] == 5 and out["missing"] == 1


V2_GOLD = {
    "a1": ["France"],
    "a2": ["10th and 11th centuries", "in the 10th and 11th centuries"],
    "u1": [],
    "u2": [],
    "a3": ["Rollo"],
}
V2_PRED = {"a1": "France", "a2": "11th centuries", "u1": "", "u2": "Rollo", "a3": ""}
V2_ODDS = {"a1": -3.0, "a2": -1.0, "a3": 2.0, "u1": 0.5, "u2": 5.0}
# per-question raw EM / F1 by hand: a1 1/1, a2 0/(2/3: vs "10th and 11th centuries"),
# u1 1/1 ("" vs [""]), u2 0/0, a3 0/0
F1_A2 = 2 / 3


def test_v2_hand_computed_breakdown():
    out = ev.evaluate_v2(V2_GOLD, V2_PRED)
    assert out["exact"] == pytest.approx(100 * 2 / 5)
    assert out["f1"] == pytest.approx(100 * (1 + F1_A2 + 1) / 5)
    assert out["HasAns_total"] == 3 and out["NoAns_total"] == 2 and out["total"] == 5
    assert out["HasAns_exact"] == pytest.approx(100 / 3)
    assert out["HasAns_f1"] == pytest.approx(100 * (1 + F1_A2) / 3)
    assert out["NoAns_exact"] == pytest.approx(50.0) and out["NoAns_f1"] == pytest.approx(50.0)
    assert "best_f1" not in out


def test_v2_null_odds_threshold_and_search():
    out = ev.evaluate_v2(V2_GOLD, V2_PRED, V2_ODDS)  # default na_prob_thresh 1.0
    # odds > 1 -> predicted "": a3 (answerable: 0), u2 (unanswerable: 1)
    assert out["exact"] == pytest.approx(100 * 3 / 5)
    assert out["f1"] == pytest.approx(100 * (1 + F1_A2 + 1 + 1) / 5)
    # search: all-null scores 2; admit a1 (+1) -> 3, a2 (+2/3) -> 3.67, u1 (+0), a3 (+0),
    # u2 (-1, it answers "Rollo"); best F1 after a2 (t = -1), best EM after a1 (t = -3)
    assert out["best_f1"] == pytest.approx(100 * (3 + F1_A2) / 5)
    assert out["best_f1_thresh"] == -1.0
    assert out["best_exact"] == pytest.approx(60.0) and out["best_exact_thresh"] == -3.0


def test_find_best_null_threshold_applies_it():
    thresh, metrics = pp.find_best_null_threshold(V2_GOLD, V2_PRED, V2_ODDS)
    assert thresh == -1.0 and metrics["null_score_diff_threshold"] == -1.0
    assert metrics["f1"] == pytest.approx(metrics["best_f1"])
    applied = pp.apply_null_threshold(V2_PRED, V2_ODDS, thresh)
    assert applied == {"a1": "France", "a2": "11th centuries", "u1": "", "u2": "", "a3": ""}
    direct = ev.evaluate_v2(V2_GOLD, applied)  # scoring the rewritten predictions agrees
    assert direct["f1"] == pytest.approx(metrics["f1"])
    assert direct["exact"] == pytest.approx(metrics["exact"])


def test_all_null_threshold_is_below_every_odds():
    preds = {"a1": "wrong", "u1": "also wrong"}
    gold = {"a1": ["France"], "u1": []}
    odds = {"a1": 0.2, "u1": 0.7}
    best, t = ev.best_threshold(
        preds, ev.raw_scores_v2(gold, preds)[1], odds, {"a1": True, "u1": False}
    )
    assert best == pytest.approx(50.0) and t < 0.2
    assert pp.apply_null_threshold(preds, odds, t) == {"a1": "", "u1": ""}


def test_files_and_eval_results(tmp_path, data_dir):
    dev = data_dir / "squad" / "v2.0" / "dev-v2.0.json"
    gold = ev.load_gold(dev)
    perfect = {q: (g[0] if g else "") for q, g in gold.items()}
    empty = {q: "" for q in gold}
    pred_file = tmp_path / "p.json"
    pred_file.write_text(json.dumps(perfect))
    out = ev.evaluate_files(dev, pred_file, version_2_with_negative=True)
    assert out["exact"] == 100.0 and out["f1"] == 100.0
    n_noans = sum(1 for g in gold.values() if not g)
    assert 0 < n_noans < len(gold)
    assert ev.evaluate_v2(gold, empty)["exact"] == pytest.approx(100 * n_noans / len(gold))
    path = ev.write_eval_results(tmp_path / "eval_results.txt", {"f1": 50.0, "exact": 25.0})
    assert open(path).read() == "exact = 25.0\nf1 = 50.0\n"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        ev.load_gold(bad)


# ----------------------------------------------------------------------------- post-processing
PARA = "Le Café Zürich opened in 1858, near the lake."


def _synthetic():
    """One example, two windows over hand-made pieces with their original char spans."""
    words = [
        (0, 2),
        (3, 7),
        (8, 14),
        (15, 21),
        (22, 24),
        (25, 29),
        (29, 30),
        (31, 35),
        (36, 39),
        (40, 44),
        (44, 45),
    ]  # Le Café Zürich opened in 1858 , near the lake .
    example = SquadExample("q", "Where?", PARA, "", -1, False, ("Café Zürich",))
    feats = []
    for w, (lo, hi) in enumerate([(0, 7), (4, 11)]):  # windows overlap on words 4..6
        offset = 3  # [CLS] q [SEP]
        t2o = {offset + k: words[lo + k] for k in range(hi - lo)}
        ctx = {offset + k: (k >= 1 if w == 1 else lo + k < 5) for k in range(hi - lo)}
        n = 16
        feats.append(
            SquadFeature(
                1000000000 + w,
                0,
                w,
                [],
                [0] * n,
                [1] * n,
                [0] * n,
                [1] * n,
                t2o,
                ctx,
                paragraph_len=hi - lo,
            )
        )
    return example, feats


def test_v1_postprocess_returns_original_text_across_windows(tmp_path):
    example, feats = _synthetic()
    n = 16
    r0 = {"start_logits": np.zeros(n), "end_logits": np.zeros(n)}
    r0["start_logits"][4] = 5.0  # "Café" (window 0, pos 4 = word 1)
    r0["end_logits"][5] = 5.0  # "Zürich"
    r0["start_logits"][0] = 50.0  # CLS: not in the paragraph, never proposed
    r1 = {"start_logits": np.zeros(n), "end_logits": np.zeros(n)}
    r1["start_logits"][6] = 9.0  # window 1 pos 6 = word 7 "near" (max context there)
    r1["end_logits"][8] = 9.0  # word 9 "lake"
    r1["end_logits"][3] = 20.0  # before the start: invalid
    results = {1000000000: r0, 1000000001: r1}
    preds, nbest = pp.predict_v1([example], feats, results, n_best_size=5, max_answer_length=5)
    assert preds["q"] == "near the lake"
    texts = [e["text"] for e in nbest["q"]]
    assert "Café Zürich" in texts and len(texts) == len(set(texts)) <= 5
    assert sum(e["probability"] for e in nbest["q"]) == pytest.approx(1.0)
    preds, _ = pp.predict_v1([example], feats, results, n_best_size=5, max_answer_length=2)
    assert preds["q"] == "Café Zürich"  # "near the lake" is 3 tokens: too long
    paths = pp.write_predictions(tmp_path, preds, nbest)
    assert json.load(open(paths["predictions"], encoding="utf-8")) == {"q": "Café Zürich"}
    assert not list(tmp_path.glob(".*"))  # no temporary files left


def test_v1_max_context_filter():
    example, feats = _synthetic()
    n = 16
    r0 = {"start_logits": np.zeros(n), "end_logits": np.zeros(n)}
    r0["start_logits"][8] = 9.0  # window 0 pos 8 = word 5 "1858": max context is window 1
    r0["end_logits"][8] = 9.0
    r1 = {"start_logits": np.zeros(n), "end_logits": np.zeros(n)}
    r1["start_logits"][4] = 1.0  # window 1 pos 4 = word 5 again, with its max context
    r1["end_logits"][4] = 1.0
    preds, nbest = pp.predict_v1(
        [example], feats, {1000000000: r0, 1000000001: r1}, n_best_size=3, max_answer_length=3
    )
    assert preds["q"] == "1858"
    top = nbest["q"][0]
    assert top["start_logit"] == 1.0  # from window 1, not window 0's higher scores


def test_v2_postprocess_null_odds_and_threshold(tmp_path):
    example, feats = _synthetic()

    def beam(starts, ends, cls):
        return {
            "start_top_log_probs": np.log([0.5, 0.3]),
            "start_top_index": np.array(starts),
            "end_top_log_probs": np.log([0.6, 0.2, 0.7, 0.1]),
            "end_top_index": np.array(ends),
            "cls_logits": np.float32(cls),
        }

    # window 0: start 4 ("Café") with ends 5 ("Zürich"), 2 (question: invalid);
    #           start 0 (CLS: invalid) with ends 4, 5
    results = {
        1000000000: beam([4, 0], [5, 2, 4, 5], 1.5),
        1000000001: beam([3, 5], [3, 3, 5, 6], -0.5),
    }
    preds, nbest, odds = pp.predict_v2(
        [example], feats, results, n_best_size=4, max_answer_length=4, start_n_top=2, end_n_top=2
    )
    assert odds == {"q": -0.5}  # min cls_logits over the windows
    # window 1 start 3 is word 4 ("in"): no max context; start 5 = word 6 "," ends 5, 6
    assert preds["q"] == "Café Zürich"
    assert [e["text"] for e in nbest["q"]][:1] == ["Café Zürich"]
    assert nbest["q"][0]["start_log_prob"] == pytest.approx(np.log(0.5))
    preds_t, _, _ = pp.predict_v2(
        [example], feats, results, start_n_top=2, end_n_top=2, null_score_diff_threshold=-1.0
    )
    assert preds_t == {"q": ""}
    paths = pp.write_predictions(tmp_path, preds, nbest, odds)
    assert json.load(open(paths["null_odds"])) == {"q": -0.5}


def test_collect_results_and_missing_output():
    batches = [
        {"unique_ids": np.array([7, 8]), "cls_logits": np.array([1.0, 2.0])},
        {"unique_ids": np.array([8]), "cls_logits": np.array([4.0])},
    ]
    out = pp.collect_results(batches)
    assert out[7]["cls_logits"] == 1.0 and out[8]["cls_logits"] == 3.0
    example, feats = _synthetic()
    with pytest.raises(ValueError, match="1000000000"):
        pp.predict_v1([example], feats, {})
