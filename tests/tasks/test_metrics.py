"""albert_tf.tasks.metrics against scikit-learn / scipy (test-only dependencies)."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

from albert_tf.tasks import metrics
from albert_tf.tasks.glue.metrics import glue_metrics
from albert_tf.tasks.race.metrics import race_accuracy, race_metrics

SEEDS = range(5)


def _classes(seed, n=200, k=2):
    rng = np.random.default_rng(seed)
    return rng.integers(0, k, n), rng.integers(0, k, n)


@pytest.mark.parametrize("seed", SEEDS)
def test_accuracy_matches_sklearn(seed):
    p, y = _classes(seed, k=3)
    assert metrics.accuracy(p, y) == pytest.approx(skm.accuracy_score(y, p), abs=1e-15)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [2, 3])
def test_mcc_matches_sklearn(seed, k):
    p, y = _classes(seed, k=k)
    assert metrics.matthews_corrcoef(p, y) == pytest.approx(skm.matthews_corrcoef(y, p), abs=1e-12)


def test_mcc_constant_prediction_is_zero_not_nan():
    y = np.array([0, 1, 1, 0, 1])
    assert metrics.matthews_corrcoef(np.ones(5, int), y) == 0.0
    assert metrics.matthews_corrcoef(y, np.zeros(5, int)) == 0.0  # constant labels


def test_mcc_perfect_and_inverted():
    y = np.array([0, 1, 1, 0, 1, 0])
    assert metrics.matthews_corrcoef(y, y) == pytest.approx(1.0)
    assert metrics.matthews_corrcoef(1 - y, y) == pytest.approx(-1.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_f1_matches_sklearn(seed):
    p, y = _classes(seed)
    assert metrics.f1(p, y) == pytest.approx(skm.f1_score(y, p), abs=1e-12)


def test_f1_positive_label_is_one_and_degenerate_zero():
    y = np.array([1, 1, 0, 0])
    p = np.array([1, 0, 0, 0])
    assert metrics.f1(p, y) == pytest.approx(2 / 3)
    assert metrics.f1(np.zeros(4, int), np.zeros(4, int)) == 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_pearson_spearman_match_scipy(seed):
    rng = np.random.default_rng(seed)
    y = rng.uniform(0, 5, 300)
    p = y + rng.normal(0, 1.5, 300)
    assert metrics.pearson(p, y) == pytest.approx(stats.pearsonr(p, y)[0], abs=1e-12)
    assert metrics.spearman(p, y) == pytest.approx(stats.spearmanr(p, y)[0], abs=1e-12)
    assert metrics.mean_squared_error(p, y) == pytest.approx(
        skm.mean_squared_error(y, p), rel=1e-12
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_spearman_with_ties_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 6, 100).astype(float)  # heavy ties, like STS-B scores
    p = np.round(y + rng.normal(0, 1.0, 100))
    assert metrics.spearman(p, y) == pytest.approx(stats.spearmanr(p, y)[0], abs=1e-12)
    np.testing.assert_allclose(metrics.rankdata(p), stats.rankdata(p, method="average"))


def test_correlations_constant_input_zero():
    y = np.array([1.0, 2.0, 3.0])
    assert metrics.pearson(np.full(3, 2.5), y) == 0.0
    assert metrics.spearman(np.full(3, 2.5), y) == 0.0


def test_length_mismatch_and_empty_raise():
    with pytest.raises(ValueError, match="2 predictions but 3 labels"):
        metrics.accuracy([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="at least one"):
        metrics.pearson([], [])


def test_glue_metrics_keys_per_task():
    p, y = _classes(0)
    assert set(glue_metrics("CoLA", p, y)) == {"accuracy", "matthews_corrcoef"}
    assert set(glue_metrics("mrpc", p, y)) == {"accuracy", "f1"}
    assert set(glue_metrics("qqp", p, y)) == {"accuracy", "f1"}
    assert set(glue_metrics("mnli", p, y)) == {"accuracy"}
    assert set(glue_metrics("mismnli", p, y)) == {"accuracy"}
    assert set(glue_metrics("rte", p, y)) == {"accuracy"}
    assert set(glue_metrics("ax", p, y)) == {"accuracy", "matthews_corrcoef"}
    got = glue_metrics("mrpc", p, y)
    assert got["f1"] == pytest.approx(skm.f1_score(y, p))
    assert got["accuracy"] == pytest.approx(skm.accuracy_score(y, p))


def test_glue_metrics_stsb():
    rng = np.random.default_rng(1)
    y = rng.uniform(0, 5, 50)
    p = y + rng.normal(0, 1, 50)
    got = glue_metrics("sts-b", p, y)
    assert set(got) == {"pearson", "spearman", "mse"}
    assert got["spearman"] == pytest.approx(stats.spearmanr(p, y)[0], abs=1e-12)
    assert all(isinstance(v, float) for v in got.values())


def test_glue_metrics_unknown_task():
    with pytest.raises(KeyError, match="known tasks"):
        glue_metrics("squad", [0], [0])


def test_race_metrics_by_level():
    p = [0, 1, 2, 3, 0, 0]
    y = [0, 1, 0, 3, 1, 0]
    levels = ["middle", "middle", "high", "high", "high", "middle"]
    got = race_metrics(p, y, levels)
    assert got == pytest.approx({"accuracy": 4 / 6, "middle_accuracy": 1.0, "high_accuracy": 1 / 3})
    high_only = race_metrics(p[2:5], y[2:5], levels[2:5])
    assert set(high_only) == {"accuracy", "high_accuracy"}
    assert race_accuracy(p, y) == pytest.approx(4 / 6)
    with pytest.raises(ValueError, match="unknown RACE levels"):
        race_metrics(p, y, ["low"] * 6)
